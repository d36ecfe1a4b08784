"""Containers and iteration: tuples, lists, dicts, sets and their views and
iterators (``containers``), dict and set keys (``keys``), the run-time order
of sets of objects hashed by identity (``set_order``), real iterators from
outside the frame (``real_iterator``), the real type of each modelled
iterator (``iterator_types``), ``types.MappingProxyType``
(``mapping_proxy``) and ``torch.utils._pytree`` over them (``pytree``).

May import at module level: the core only.  The core is ``values.base``,
``values.constant``, ``values.builder`` (which imports the sub-packages only
inside functions) and ``values.kinds``.  Anything else is reached inside a
function, a value kind through ``values.kinds``.  This ``__init__`` imports
nothing, so importing the package costs nothing.
"""
