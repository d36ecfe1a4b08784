"""Functions, generators, exceptions and frames: user functions, bound methods
and closures (``functions``), the cells of functions made per call
(``closure_aliasing``), generators and the graph breaks inside them
(``generators``, ``generator_breaks``), ``throw()``/``close()`` handed through
``yield from`` (``generator_delegation``), exception objects (``exceptions``),
and ``locals()``/``vars()``/``dir()`` of the frame (``frame_locals``).

May import at module level: the core, ``containers`` and ``objects``
(``generator_breaks``: a generator from outside the frame is an object).  The
core is ``values.base``, ``values.constant``, ``values.builder`` (which
imports the sub-packages only inside functions) and ``values.kinds``.
Anything else is reached inside a function, a value kind through
``values.kinds``.  This ``__init__`` imports nothing, so importing the
package costs nothing.
"""
