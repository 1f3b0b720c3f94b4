"""Py4J's name lookups, answered once per JVM instead of once per call.

PySpark reaches every SQL function through Py4J by name: `F.col("x")` asks the JVM
what `functions` is, then what `functions.col` is, then calls it. Py4J keeps no
answer, so two of every three round trips only repeat a lookup, and on the JVM side
a short name is tried against each wildcard import with `Class.forName`: a miss
searches every jar on the class path. In a warm analysis of a small history the
lookups take a noticeable share of the JVM's time in the thread that serves Python,
so the answers are kept; the gain is modest, since most of a small analysis is Spark
planning, not Py4J (docs/findings.md, "Py4J's name lookups are kept once per JVM";
bench/planning_bench.py measures it).

What is kept cannot change while the JVM lives: a class a name resolves to, and a
class's static method. A static field's value, a package, an instance's method are
looked up every time, as before.
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JVMView

_installed = False


def install() -> None:
    """Keep the answers on the objects that asked: the name becomes an instance
    attribute, which Python finds before it would call `__getattr__` again."""
    global _installed
    if _installed:
        return
    view_lookup = JVMView.__getattr__
    class_lookup = JavaClass.__getattr__

    def view_getattr(self: JVMView, name: str) -> Any:
        found = view_lookup(self, name)
        if isinstance(found, JavaClass):
            self.__dict__[name] = found
        return found

    def class_getattr(self: JavaClass, name: str) -> Any:
        found = class_lookup(self, name)
        if isinstance(found, JavaMember | JavaClass):
            self.__dict__[name] = found
        return found

    JVMView.__getattr__ = view_getattr  # type: ignore[method-assign]
    JavaClass.__getattr__ = class_getattr  # type: ignore[method-assign]
    _installed = True
