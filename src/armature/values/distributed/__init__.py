"""``torch.distributed`` inside compiled code: functional collectives as
graph nodes, rank and world-size queries as guarded constants
(``distributed``).

May import at module level: the core only.  The core is ``values.base``,
``values.constant``, ``values.builder`` (which imports the sub-packages only
inside functions) and ``values.kinds``.  Anything else is reached inside a
function, a value kind through ``values.kinds``.  This ``__init__`` imports
nothing, so importing the package costs nothing.
"""
