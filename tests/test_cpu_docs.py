"""The documents stay true to what they are generated from or point to."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = r"\b((?:docs|scripts|benchmarks|examples|tests|torch_tile|csrc)/[\w./-]+\.(?:md|py|sh|cpp|h|cu))\b"


def test_benchmarks_document_is_generated_from_the_committed_results():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "report.py"), "--check"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_files_the_documents_name_exist():
    for doc in ("README.md", "docs/DEVELOPING.md", "docs/ARCHITECTURE.md"):
        with open(os.path.join(ROOT, doc)) as f:
            text = f.read()
        named = set(re.findall(PATH, text))
        # C++ headers are named as included (<torch_tile/x.h>: csrc/include/torch_tile/x.h).
        missing = sorted(p for p in named if not any(os.path.exists(os.path.join(ROOT, base, p))
                                                     for base in ("", os.path.join("csrc", "include"))))
        assert not missing, f"{doc} names files that do not exist: {missing}"
