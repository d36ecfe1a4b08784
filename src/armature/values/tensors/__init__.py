"""Tensors and torch: tensors and their attributes (``tensor``,
``tensor_attrs``), symbolic sizes and ints (``symbolic``), torch functions
and ops as graph nodes (``torch_ops``), tensor subclasses and
``__torch_function__`` (``torch_function``), functorch's ``vmap``,
``autograd.Function``, autocast and inference mode, and the torch/CUDA
state queries answered while tracing (``cuda_queries``, ``state_queries``).

May import at module level: the core only.  The core is ``values.base``,
``values.constant``, ``values.builder`` (which imports the sub-packages only
inside functions) and ``values.kinds``.  Anything else is reached inside a
function, a value kind through ``values.kinds``.  This ``__init__`` imports
nothing, so importing the package costs nothing.
"""
