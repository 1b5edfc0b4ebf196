"""Kernels and launch configurations by stable id: the ids persisted in specialization keys, serialized plans and
bundles, and each frontend's registry of what its compile callback may be asked for."""

import hashlib
import json
from typing import Any, Callable

from .. import _C, _process_locks

# Kernel and launch-configuration ids are persisted (specialization keys, serialized plans, bundles), so their
# hash is their own, independent of the disk cache's keys: scheme 1 is the first 64 bits of the SHA-256 of the
# parts' canonical JSON (sorted keys, no spaces), shifted right by one (a non-negative int64). A new scheme
# changes every persisted id: it goes with new plan and bundle format versions.
STABLE_ID_SCHEME = 1


def stable_id(*parts) -> int:
    """The id of JSON-serialisable ``parts`` (scheme ``STABLE_ID_SCHEME``): the same in every process."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return int(hashlib.sha256(text.encode()).hexdigest()[:16], 16) >> 1


# A compile callback asked for a configuration this process never traced (frontends' shared message).
UNKNOWN_CONFIG = ("launch configuration {cid} is not known in this process: the plan launching it was not traced "
                  "here (it came from a bundle) and the bundle has no variant for this call's specialization key; "
                  "export the bundle with an example of this call")


class KernelRegistry:
    """One frontend's kernels and launch configurations by stable id, for its compile callback (kernels are
    registered with the runtime on first use). Ids are computed once per kernel object and per configuration
    key (``kernel_id`` / ``config_id``: an id's inputs, such as Triton's ``cache_key``, may cost a source parse)."""

    def __init__(self, frontend: str):
        self.frontend = frontend
        self._lock = _process_locks.lock()
        self.kernels: dict[int, Any] = {}  # id -> the first kernel with it
        self.configs: dict[int, Any] = {}
        self._kernel_ids: dict[int, tuple[int, Any]] = {}  # id(kernel) -> (its id, the kernel: kept, so never reused)
        self._config_ids: dict[Any, int] = {}  # a configuration's hashable key -> its id

    def kernel(self, kid: int, kernel: Any, name: str) -> int:
        with self._lock:
            if kid not in self.kernels:
                self.kernels[kid] = kernel
                _C.register_kernel(kid, name, self.frontend)
        return kid

    def kernel_id(self, kernel: Any, make_id: Callable[[], int], name: str) -> int:
        """``kernel``'s id: ``make_id()`` the first time this object is seen."""
        with self._lock:
            known = self._kernel_ids.get(id(kernel))
        if known is not None:
            return known[0]
        kid = self.kernel(make_id(), kernel, name)
        with self._lock:
            self._kernel_ids[id(kernel)] = (kid, kernel)
        return kid

    def config(self, cid: int, config: Any) -> int:
        with self._lock:
            self.configs.setdefault(cid, config)
        return cid

    def config_id(self, key: Any, make_id: Callable[[], int], config: Any) -> int:
        """The id of the configuration ``key`` stands for: ``make_id()`` the first time the key is seen."""
        with self._lock:
            cid = self._config_ids.get(key)
        if cid is not None:
            return cid
        cid = self.config(make_id(), config)
        with self._lock:
            self._config_ids[key] = cid
        return cid

    def config_for(self, kid: int, cid: int, kind: str) -> Any:
        """The configuration a compile callback is asked for; LookupError (UNKNOWN_CONFIG) if it was never traced."""
        config = self.configs.get(cid)
        if config is None:
            kernel = self.kernels.get(kid)
            name = getattr(kernel, "name", None) or getattr(getattr(kernel, "_pyfunc", None), "__name__", kid)
            raise LookupError(f"torch_tile: {kind} {name}: " + UNKNOWN_CONFIG.format(cid=cid))
        return config
