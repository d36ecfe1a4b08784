"""``torch.distributed`` inside compiled code: functional collectives as
graph nodes, rank and world-size queries as guarded constants
(``distributed``).

May import: the core (``values.base``, ``values.constant``,
``values.kinds``) at module level; ``tensors`` only inside functions.
Nothing is imported here: importing the package costs nothing.
"""
