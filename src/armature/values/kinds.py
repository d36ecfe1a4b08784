"""Value kinds by name: the one place where a module of the value layer finds a
Value class (or a function that builds values) of another module without
importing it.

The value layer is one web: a tuple's method returns a list, an object's
attribute is a tensor, a tensor's ``tolist()`` is a list of numbers.  The
module that builds a value of another kind cannot import that kind's module
at module level, since that one imports it back (and the sub-packages of
``values/`` stand in layers: see each one's ``__init__`` and
docs/ARCHITECTURE.md).  Instead of a late import in the function, such code
reads ``kinds.TupleValue``, ``kinds.TensorValue``...: ``HOMES`` below says
which module defines each kind, and the first read imports that module
(already imported by then in practice: ``import armature`` loads the whole
layer) and keeps the attribute here, so a later read is a plain module
attribute.  A module may import ``kinds`` at module level: it imports
nothing.

Patch a kind's attributes (``kinds.TupleValue.method``), never the name in its
home module: a read after the first one does not look there again.
"""
from __future__ import annotations

import importlib
from typing import Any

#: kind name -> its module, relative to ``armature.values``.
HOMES: dict[str, str] = {
    "BoundContainerMethod": "containers.containers",
    "DictValue": "containers.containers",
    "DictViewIterator": "containers.containers",
    "DictViewValue": "containers.containers",
    "IteratorValue": "containers.containers",
    "LazyListValue": "containers.containers",
    "ListValue": "containers.containers",
    "SetValue": "containers.containers",
    "SliceValue": "containers.containers",
    "TupleValue": "containers.containers",
    "ConfigPatchFunctionValue": "directives.config_patch",
    "ConfigPatchValue": "directives.config_patch",
    "ExceptionValue": "functions.exceptions",
    "make_exception": "functions.exceptions",
    "BoundMethodValue": "functions.functions",
    "CellValue": "functions.functions",
    "NestedFunctionValue": "functions.functions",
    "RealCellValue": "functions.functions",
    "UserFunctionValue": "functions.functions",
    "GeneratorValue": "functions.generators",
    "FreshModuleValue": "nn.fresh_modules",
    "ModuleDictView": "nn.module_dict",
    "ModuleValue": "nn.modules",
    "NewModuleValue": "nn.modules",
    "DecoratedFunctionValue": "objects.class_def",
    "MadeClassValue": "objects.class_def",
    "made_class_value": "objects.class_def",
    "InstanceDictValue": "objects.instance_dict",
    "ClassValue": "objects.objects",
    "ObjectValue": "objects.objects",
    "SuperValue": "objects.objects",
    "wrap_class_attr": "objects.objects",
    "FormattedStringValue": "operations.deferred_text",
    "IdValue": "operations.identity",
    "DefaultDictValue": "stdlib.collections",
    "DequeValue": "stdlib.collections",
    "OrderedDictValue": "stdlib.collections",
    "EnumMemberValue": "stdlib.enum",
    "PartialValue": "stdlib.functools",
    "DeferredTruth": "tensors.deferred_truth",
    "ApplyValue": "tensors.autograd_function",
    "SymbolicNumberValue": "tensors.symbolic",
    "sym_value": "tensors.symbolic",
    "TensorMethodValue": "tensors.tensor",
    "TensorValue": "tensors.tensor",
    "graph_call": "tensors.tensor",
    "PythonModuleValue": "tensors.torch_ops",
    "TorchFunctionValue": "tensors.torch_ops",
}


def __getattr__(name: str) -> Any:
    home = HOMES.get(name)
    if home is None:
        raise AttributeError(f"armature.values.kinds has no kind {name!r}")
    value = getattr(importlib.import_module(f"{__package__}.{home}"), name)
    globals()[name] = value
    return value
