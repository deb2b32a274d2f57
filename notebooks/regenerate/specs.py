"""Every notebook's spec, in order."""

from __future__ import annotations

import nb01
import nb02
import nb03
import nb04

SPECS = [nb01.SPEC, nb02.SPEC, nb03.SPEC, nb04.SPEC]
