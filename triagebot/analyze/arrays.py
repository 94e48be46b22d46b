"""The array types the statistics pass around, named once for every module of `analyze`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
# One arm's per-run values: a list as read from the results, or an array as simulated.
Samples = Sequence[float] | FloatArray
