"""Containers and iteration: tuples, lists, dicts, sets and their views and
iterators (``containers``), dict and set keys (``keys``), the run-time order
of sets of objects hashed by identity (``set_order``), real iterators from
outside the frame (``real_iterator``) and ``torch.utils._pytree`` over them
(``pytree``).

May import: the core (``values.base``, ``values.constant``,
``values.kinds``) and each other at module level; other sub-packages only
inside functions, and preferably through ``values.kinds``.  Nothing is
imported here: importing the package costs nothing.
"""
