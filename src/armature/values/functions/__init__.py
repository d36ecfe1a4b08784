"""Functions, generators, exceptions and frames: user functions, bound
methods and closures (``functions``), generators and the graph breaks
inside them (``generators``, ``generator_breaks``), exception objects
(``exceptions``), and ``locals()``/``vars()``/``dir()`` of the frame
(``frame_locals``).

May import: the core (``values.base``, ``values.constant``,
``values.kinds``), ``containers`` and ``objects`` at module level; other
sub-packages only inside functions, and preferably through
``values.kinds``.  Nothing is imported here: importing the package costs
nothing.
"""
