"""`dataclass` for the records every run loads, without the start-up cost of `dataclasses`.

The standard `dataclasses` module imports `inspect` (with `ast`, `dis`,
`tokenize`: about 7 ms) and compiles five or six methods per class with
`exec` (about 0.6 ms a class); the twenty records a diagnosis loads (model.py,
findings.py, view.py, keylines.py, scanner.py) cost a fifth of the CLI's
start-up that way. This module gives the same classes for the subset those
records use (`frozen`, `field(default=, default_factory=, compare=, repr=)`,
`__post_init__`): the same `__init__` signature, equality, hash (a tuple of the
compared fields, as `dataclasses` hashes it), repr and frozen-ness. `__init__`
is compiled on the class's first instance, so records a run never builds cost
nothing; equality, hash and repr are shared functions.

Classes also carry `__dataclass_fields__`, so `dataclasses.replace()` works on
them (i18n.py, tests); use this module's `fields()` and `replace()` otherwise.
Type checkers see the standard `dataclasses` (the TYPE_CHECKING branch), so the
records are typed exactly as before; tests/test_record.py compares both.
"""
from typing import TYPE_CHECKING

__all__ = ["dataclass", "field", "fields", "replace", "FrozenInstanceError"]

if TYPE_CHECKING:
    from dataclasses import FrozenInstanceError, dataclass, field, fields, replace
else:
    from operator import attrgetter

    class _Missing:
        def __repr__(self):
            return "MISSING"

    MISSING = _Missing()

    class FrozenInstanceError(AttributeError):
        """Assigning to a field of a frozen record (as dataclasses.FrozenInstanceError)."""

    class Field:
        """One field: what dataclasses.Field holds that these records use. `init` and
        `_field_type` (None: a plain field) let dataclasses.replace() read it."""

        __slots__ = ("name", "default", "default_factory", "repr", "compare", "init", "_field_type")

        def __init__(self, default=MISSING, default_factory=MISSING, repr=True, compare=True):
            if default is not MISSING and default_factory is not MISSING:
                raise ValueError("cannot specify both default and default_factory")
            self.name = None
            self.default, self.default_factory = default, default_factory
            self.repr, self.compare = repr, compare
            self.init, self._field_type = True, None

        def __repr__(self):
            return f"Field(name={self.name!r}, default={self.default!r}, compare={self.compare!r})"

    def field(*, default=MISSING, default_factory=MISSING, repr=True, compare=True):
        return Field(default, default_factory, repr, compare)

    def fields(class_or_instance):
        """The fields in declaration order (base classes' first)."""
        try:
            return tuple(class_or_instance.__dataclass_fields__.values())
        except AttributeError:
            raise TypeError("must be called with a dataclass type or instance") from None

    def replace(obj, /, **changes):
        """A copy of `obj` with `changes` (through __init__, so __post_init__ runs)."""
        for f in fields(obj):
            if f.name not in changes:
                changes[f.name] = getattr(obj, f.name)
        return obj.__class__(**changes)

    def _is_classvar(annotation):
        text = annotation if isinstance(annotation, str) else repr(annotation)
        return text.startswith(("ClassVar", "typing.ClassVar", "t.ClassVar"))

    def dataclass(cls=None, /, *, frozen=False, eq=True, repr=True):
        """@dataclass or @dataclass(frozen=True, eq=..., repr=...)."""
        def wrap(cls):
            return _process(cls, frozen, eq, repr)
        return wrap if cls is None else wrap(cls)

    def _values_of(names):
        """self -> the tuple of its `names` fields (what dataclasses compares and hashes)."""
        if len(names) > 1:
            return attrgetter(*names)
        if names:
            get = attrgetter(names[0])
            return lambda self: (get(self),)
        return lambda self: ()

    def _process(cls, frozen, eq, want_repr):
        own = cls.__dict__
        all_fields = {}
        for base in cls.__mro__[-1:0:-1]:
            all_fields.update(getattr(base, "__dataclass_fields__", {}))
        for name, annotation in own.get("__annotations__", {}).items():
            if _is_classvar(annotation):
                continue
            value = own.get(name, MISSING)
            f = value if isinstance(value, Field) else Field(default=value)
            f.name = name
            if isinstance(f.default, (list, dict, set)):
                raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
            if f.default is MISSING:
                if isinstance(value, Field):
                    delattr(cls, name)
            else:
                setattr(cls, name, f.default)
            all_fields[name] = f
        cls.__dataclass_fields__ = all_fields
        flist = tuple(all_fields.values())
        seen_default = False
        for f in flist:
            if f.default is not MISSING or f.default_factory is not MISSING:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        if "__init__" not in own:
            cls.__init__ = _first_init(cls, flist, frozen)
        if want_repr and "__repr__" not in own:
            cls.__repr__ = _repr_of(tuple(f.name for f in flist if f.repr))
        compared = tuple(f.name for f in flist if f.compare)
        values = _values_of(compared)
        if eq and "__eq__" not in own:
            def __eq__(self, other):
                if other.__class__ is self.__class__:
                    return values(self) == values(other)
                return NotImplemented
            cls.__eq__ = __eq__
        class_hash = own.get("__hash__", MISSING)
        explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in own))
        if not explicit_hash:
            if eq and frozen:
                cls.__hash__ = lambda self: hash(values(self))
            elif eq:
                cls.__hash__ = None
        if frozen:
            names = frozenset(all_fields)

            def __setattr__(self, name, value):
                if type(self) is cls or name in names:
                    raise FrozenInstanceError(f"cannot assign to field {name!r}")
                super(cls, self).__setattr__(name, value)

            def __delattr__(self, name):
                if type(self) is cls or name in names:
                    raise FrozenInstanceError(f"cannot delete field {name!r}")
                super(cls, self).__delattr__(name)
            for attr, fn in (("__setattr__", __setattr__), ("__delattr__", __delattr__)):
                if attr in own:
                    raise TypeError(f"Cannot overwrite attribute {attr} in class {cls.__name__}")
                setattr(cls, attr, fn)
        cls.__match_args__ = tuple(f.name for f in flist)
        return cls

    def _repr_of(names):
        def __repr__(self):
            return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"
        return __repr__

    def _first_init(cls, flist, frozen):
        """An __init__ that compiles the real one on the class's first instance."""
        def __init__(self, *args, **kwargs):
            if cls.__dict__.get("__init__") is __init__:
                cls.__init__ = _compile_init(cls, flist, frozen)
            cls.__init__(self, *args, **kwargs)
        return __init__

    _HAS_FACTORY = object()

    def _compile_init(cls, flist, frozen):
        """The __init__ dataclasses would write: positional-or-keyword parameters with
        the fields' defaults, each field set (object.__setattr__ when frozen), then
        __post_init__."""
        scope = {"__object_setattr": object.__setattr__, "__HAS_FACTORY": _HAS_FACTORY}
        params, body = [], []
        for f in flist:
            if f.default is not MISSING:
                scope[f"__dflt_{f.name}"] = f.default
                params.append(f"{f.name}=__dflt_{f.name}")
                value = f.name
            elif f.default_factory is not MISSING:
                scope[f"__factory_{f.name}"] = f.default_factory
                params.append(f"{f.name}=__HAS_FACTORY")
                value = f"__factory_{f.name}() if {f.name} is __HAS_FACTORY else {f.name}"
            else:
                params.append(f.name)
                value = f.name
            body.append(f"__object_setattr(self, {f.name!r}, {value})" if frozen else f"self.{f.name} = {value}")
        if hasattr(cls, "__post_init__"):
            body.append("self.__post_init__()")
        source = (f"def __create_fn__({', '.join(scope)}):\n"
                  f" def __init__(self{''.join(', ' + p for p in params)}):\n"
                  + "".join(f"  {line}\n" for line in body or ["pass"])
                  + " return __init__\n")
        namespace = {}
        exec(source, {}, namespace)
        init = namespace["__create_fn__"](**scope)
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        return init
