import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SHARED_DATASETS = ROOT.parent / "shared" / "datasets"


@pytest.fixture
def repo_root() -> Path:
    return ROOT
