"""A call of the API written once for both clients (`Call`): a function
that builds its request (endpoints.py) becomes a method of `Client`, which
sends it and returns the body, and of `AsyncClient`, where it is a coroutine
function returning the body. Each client says how it sends (`_bind`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Self, overload

from laurels.client.transport import R, Request

if TYPE_CHECKING:
    from laurels.client.clients import AsyncClient, Client

P = ParamSpec("P")  # the arguments of a call


def shown(build: Callable[..., Any]) -> inspect.Signature:
    """The signature of a call as its users see it: `-> Board`, not
    `-> Request[Board]` (annotations are strings in endpoints.py)."""
    sig = inspect.signature(build)
    ret = str(sig.return_annotation).removeprefix("Request[").removesuffix("]")
    return sig.replace(return_annotation=ret)


class Call(Generic[P, R]):
    """A call of the API, written once for both clients: `build` makes its
    request. On a `Client`, the method sends it and returns the body (`R`);
    on an `AsyncClient`, it is a coroutine function returning the body."""

    def __init__(self, build: Callable[P, Request[R]]) -> None:
        self.build = build
        self.__name__ = build.__name__
        self.__doc__ = build.__doc__
        self.__signature__ = shown(build)

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.__qualname__ = f"{owner.__name__}.{name}"

    def __repr__(self) -> str:
        return f"<laurels call {self.__name__}{self.__signature__}>"

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> Self: ...

    @overload
    def __get__(self, obj: Client, owner: type[Any] | None = None) -> Callable[P, R]: ...

    @overload
    def __get__(self, obj: AsyncClient, owner: type[Any] | None = None
                ) -> Callable[P, Coroutine[Any, Any, R]]: ...

    def __get__(self, obj: Client | AsyncClient | None, owner: type[Any] | None = None
                ) -> Any:
        if obj is None:
            return self
        return self._dress(obj._bind(self.build), obj)

    def _dress(self, method: Any, obj: object) -> Any:
        """The bound method as `help()` and `inspect` should show it."""
        method.__name__ = self.__name__
        method.__qualname__ = f"{type(obj).__name__}.{self.__name__}"
        method.__doc__ = self.__doc__
        method.__signature__ = self.__signature__
        return method
