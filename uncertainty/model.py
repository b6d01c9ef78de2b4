"""Models for analyses: named float inputs -> named float outputs, counted, cached, differentiated.

An analysis (Bayesian inference, experimental design, FORM) sees a model only through the
:class:`Model` protocol: ``evaluate(x)`` maps an input vector, shape (n_in,), to an output vector,
shape (n_out,), and ``input_names``/``output_names`` name the entries. A model may also offer
analytic derivatives (``jacobian``, ``hessian``) and batch evaluation (``evaluate_many``).

:class:`CachedModel` is the one layer every analysis goes through. It counts the evaluations of
the wrapped model, caches results by input (optimizers ask for the same point more than once), and
serves first and second derivatives: the model's own analytic ones when it has them, otherwise
central finite differences whose steps are chosen for the model's relative noise level ε
(``Model.noise``): h = ε^(1/3) s for first derivatives and h = ε^(1/4) s for second derivatives,
s = max(|x_i|, typical_i), which balance truncation against noise ([1]_, §8.1; [2]_, §5.1).
:func:`estimate_noise` measures ε for a model whose noise is not known (Moré & Wild's
difference-table estimator, [3]_).

Adapters: :class:`FunctionModel` wraps a Python response function y = f(x, **θ) evaluated at
fixed points x (``ResponseFunction`` carries its optional analytic derivatives);
:class:`NamedFunctionModel` wraps a plain function of named inputs; the PyBullet
adapter (a scene run reduced to an observer) is
``workbench.analysis.scene_model.SceneModel``, since this package never imports PyBullet.

References
----------
.. [1] P. E. Gill, W. Murray, M. H. Wright, Practical Optimization, Academic Press (1981).
.. [2] J. Nocedal, S. J. Wright, Numerical Optimization, 2nd ed., Springer (2006).
.. [3] J. J. Moré, S. M. Wild, Estimating computational noise, SIAM J. Sci. Comput. 33 (2011)
       1292-1314.
"""

from __future__ import annotations

import inspect
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from uncertainty.errors import UncertaintyError

__all__ = [
    "MACHINE_NOISE",
    "Model",
    "ResponseFunction",
    "FunctionModel",
    "NamedFunctionModel",
    "CachedModel",
    "estimate_noise",
]

#: Relative noise of a model computed in double precision by a short chain of smooth operations
#: (a closed-form expression): the unit roundoff 2^-53 ≈ 1.1e-16, times 4 for the few operations
#: whose rounding errors add up.
MACHINE_NOISE = 4 * np.finfo(float).eps / 2

#: Entries kept by the cache of :class:`CachedModel`: enough for a multi-start optimization with
#: finite-difference Hessians (each Hessian of n inputs needs 2n² + 1 points).
CACHE_SIZE = 4096


@runtime_checkable
class Model(Protocol):
    """A deterministic map from named float inputs to named float outputs.

    Attributes
    ----------
    input_names : tuple of str, length n_in
    output_names : tuple of str, length n_out
    noise : float
        Relative noise level ε of the outputs (the size of the non-smooth part of the output
        relative to its magnitude): about 1e-16 for closed forms, larger for simulations.
        Finite-difference steps are chosen from it.

    Optional methods: ``jacobian(x) -> ndarray (n_out, n_in)``, ``hessian(x) -> ndarray
    (n_out, n_in, n_in)`` (second derivatives of every output) and ``evaluate_many(X) -> ndarray
    (m, n_out)`` for a batch X of shape (m, n_in).
    """

    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    noise: float

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """Outputs, shape (n_out,), at inputs ``x``, shape (n_in,)."""
        ...


@dataclass(frozen=True)
class ResponseFunction:
    """A response y = f(x, **θ) at points x, with optional analytic derivatives in θ.

    Attributes
    ----------
    value : callable
        ``value(x, **theta) -> ndarray (N,)`` for points ``x``, shape (N,).
    parameters : tuple of str
        Names of the keyword parameters θ, in the order of the derivative arrays.
    derivatives : callable, optional
        ``derivatives(x, **theta) -> (y (N,), dy (N, k), d2y (N, k, k))`` with k =
        ``len(parameters)``: the response and its first and second derivatives in θ.
    vectorized : bool
        ``value`` accepts each θ as an array of shape (m, 1) and returns shape (m, N).
    """

    value: Callable[..., np.ndarray]
    parameters: tuple[str, ...]
    derivatives: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    vectorized: bool = False

    @classmethod
    def from_callable(cls, func: Callable[..., np.ndarray]) -> ResponseFunction:
        """Wrap ``f(x, a, b, ...)``: the parameters are the arguments after the first."""
        if isinstance(func, ResponseFunction):
            return func
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError):
            raise UncertaintyError(
                f"function: cannot read the signature of {func!r}", "function"
            ) from None
        names = [
            p.name
            for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        if not names:
            raise UncertaintyError(
                "function: a response function takes the points x first, then its parameters",
                "function",
            )
        return cls(value=func, parameters=tuple(names[1:]))


class FunctionModel:
    """Model adapter for a response function at fixed points: θ -> f(x, **θ, **constants).

    Parameters
    ----------
    response : ResponseFunction or callable
        The response; a plain callable ``f(x, a, b, ...)`` is wrapped by
        :meth:`ResponseFunction.from_callable` (no analytic derivatives).
    x : array_like, shape (N,)
        Points at which the response is observed (e.g. measurement times, s).
    inputs : sequence of str
        The parameters that are model inputs, in input-vector order.
    constants : mapping, optional
        Values of the other parameters of the response.
    noise : float
        Relative noise level of the response (default :data:`MACHINE_NOISE`).
    output_names : sequence of str, optional
        Default ``y[0]``, ``y[1]``, ...
    """

    def __init__(
        self,
        response: ResponseFunction | Callable[..., np.ndarray],
        x: np.ndarray,
        inputs: Sequence[str],
        constants: Mapping[str, float] | None = None,
        *,
        noise: float = MACHINE_NOISE,
        output_names: Sequence[str] | None = None,
    ):
        self.response = ResponseFunction.from_callable(response)
        self.x = np.asarray(x, dtype=float).reshape(-1)
        self.input_names = tuple(inputs)
        self.constants = {k: float(v) for k, v in (constants or {}).items()}
        self.noise = float(noise)
        known = set(self.response.parameters)
        for name in (*self.input_names, *self.constants):
            if name not in known:
                raise UncertaintyError(
                    f"{name}: not a parameter of the response function; it takes "
                    f"{', '.join(self.response.parameters) or '(none)'}",
                    name,
                )
        missing = known - set(self.input_names) - set(self.constants)
        if missing:
            raise UncertaintyError(
                f"constants: no value for {', '.join(sorted(missing))} "
                "(neither inferred nor given)",
                "constants",
            )
        both = set(self.input_names) & set(self.constants)
        if both:
            raise UncertaintyError(
                f"constants: {', '.join(sorted(both))} is both an input and a constant", "constants"
            )
        n = self.x.size
        self.output_names = (
            tuple(output_names) if output_names is not None else tuple(f"y[{k}]" for k in range(n))
        )
        self._index = [self.response.parameters.index(name) for name in self.input_names]
        if self.response.derivatives is None:  # hide the optional methods: FD takes over
            self.jacobian = None  # type: ignore[assignment]
            self.hessian = None  # type: ignore[assignment]
        if not self.response.vectorized:
            self.evaluate_many = None  # type: ignore[assignment]

    def _kwargs(self, x: np.ndarray) -> dict[str, float]:
        return {**self.constants, **dict(zip(self.input_names, map(float, x), strict=True))}

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """Response at the points, shape (N,), for inputs ``x``, shape (n_in,)."""
        y = np.asarray(self.response.value(self.x, **self._kwargs(x)), dtype=float)
        return np.broadcast_to(y, self.x.shape).copy()

    def evaluate_many(self, X: np.ndarray) -> np.ndarray:
        """Responses for a batch of inputs ``X``, shape (m, n_in) -> (m, N)."""
        X = np.asarray(X, dtype=float)
        kw: dict[str, object] = dict(self.constants)
        for j, name in enumerate(self.input_names):
            kw[name] = X[:, j : j + 1]
        y = np.asarray(self.response.value(self.x[None, :], **kw), dtype=float)
        return np.broadcast_to(y, (X.shape[0], self.x.size)).copy()

    def _derivatives(self, x: np.ndarray):
        assert self.response.derivatives is not None
        _, dy, d2y = self.response.derivatives(self.x, **self._kwargs(x))
        return np.asarray(dy, dtype=float), np.asarray(d2y, dtype=float)

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """Analytic ∂y/∂θ, shape (N, n_in)."""
        dy, _ = self._derivatives(x)
        return dy[:, self._index]

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """Analytic ∂²y/∂θ∂θ, shape (N, n_in, n_in)."""
        _, d2y = self._derivatives(x)
        return d2y[:, self._index][:, :, self._index]


class NamedFunctionModel:
    """A plain Python function ``f(a, b, ...) -> outputs`` as a :class:`Model`: the inputs are its
    argument names (in signature order), the outputs the given names.

    Parameters
    ----------
    func : callable
        Takes the inputs as keyword arguments; returns a sequence of ``len(output_names)`` floats
        or a mapping from output name to float.
    output_names : sequence of str
        Names of the outputs, in order.
    noise : float
        Relative noise level of ``func`` (default :data:`MACHINE_NOISE`).
    """

    def __init__(
        self, func: Callable[..., object], output_names: Sequence[str], noise: float = MACHINE_NOISE
    ):
        params = inspect.signature(func).parameters.values()
        self.func = func
        self.input_names = tuple(
            p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        )
        self.output_names = tuple(output_names)
        self.noise = float(noise)

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """Outputs, shape (n_out,), at inputs ``x``, shape (n_in,)."""
        kw = dict(zip(self.input_names, map(float, x), strict=True))
        y = self.func(**kw)
        if isinstance(y, Mapping):
            y = [y[name] for name in self.output_names]
        return np.asarray(y, dtype=float).reshape(len(self.output_names))


class CachedModel:
    """Counting, caching and differentiating layer around a :class:`Model`.

    Parameters
    ----------
    model : Model
        The wrapped model.
    typical : array_like, shape (n_in,), optional
        Typical magnitude of each input: finite-difference steps are relative to
        max(|x_i|, typical_i). Default 1 for every input.

    Attributes
    ----------
    n_evaluations : int
        Points evaluated by the wrapped model (single calls, finite-difference points and batch
        rows), i.e. the cost.
    n_requests : int
        Single-point requests, including those served from the cache.
    n_jacobians, n_hessians : int
        Derivative requests (analytic or by finite differences).
    """

    def __init__(self, model: Model, typical: Sequence[float] | np.ndarray | None = None):
        if isinstance(model, CachedModel):
            model = model.model
        self.model = model
        self.input_names = tuple(model.input_names)
        self.output_names = tuple(model.output_names)
        self.noise = float(model.noise)
        if not (self.noise > 0 and math.isfinite(self.noise)):
            raise UncertaintyError(f"noise: expected a positive number, got {self.noise}", "noise")
        n = len(self.input_names)
        self.typical = np.ones(n) if typical is None else np.abs(np.asarray(typical, float))
        if self.typical.shape != (n,) or not np.all(self.typical > 0):
            raise UncertaintyError(
                f"typical: expected {n} positive magnitudes, got {typical!r}", "typical"
            )
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self.n_evaluations = 0
        self.n_requests = 0
        self.n_jacobians = 0
        self.n_hessians = 0

    # ---------------------------------------------------------------------------- evaluation
    @property
    def n_inputs(self) -> int:
        return len(self.input_names)

    @property
    def n_outputs(self) -> int:
        return len(self.output_names)

    @property
    def analytic_jacobian(self) -> bool:
        return callable(getattr(self.model, "jacobian", None))

    @property
    def analytic_hessian(self) -> bool:
        return callable(getattr(self.model, "hessian", None))

    @property
    def batched(self) -> bool:
        return callable(getattr(self.model, "evaluate_many", None))

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """Outputs, shape (n_out,), at ``x``, shape (n_in,); cached (a read-only array)."""
        x = np.ascontiguousarray(x, dtype=float).reshape(self.n_inputs)
        self.n_requests += 1
        key = x.tobytes()
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        y = np.asarray(self.model.evaluate(x.copy()), dtype=float).reshape(-1)
        self.n_evaluations += 1
        if y.shape != (self.n_outputs,):
            raise UncertaintyError(
                f"model: returned shape {y.shape}, expected ({self.n_outputs},)", "model"
            )
        y.setflags(write=False)
        self._cache[key] = y
        if len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return y

    def evaluate_many(self, X: np.ndarray) -> np.ndarray:
        """Outputs for a batch, shape (m, n_in) -> (m, n_out); not cached."""
        X = np.asarray(X, dtype=float).reshape(-1, self.n_inputs)
        if self.batched:
            self.n_evaluations += X.shape[0]
            Y = np.asarray(self.model.evaluate_many(X), dtype=float)  # type: ignore[attr-defined]
        else:  # one by one, counted and cached by evaluate
            Y = np.array([self.evaluate(x) for x in X])
        return Y.reshape(X.shape[0], self.n_outputs)

    def __call__(self, inputs: Mapping[str, float]) -> dict[str, float]:
        """Named inputs -> named outputs."""
        unknown = set(inputs) - set(self.input_names)
        missing = set(self.input_names) - set(inputs)
        if unknown or missing:
            raise UncertaintyError(
                f"inputs: expected exactly {', '.join(self.input_names)}; "
                f"missing {sorted(missing)}, unknown {sorted(unknown)}",
                "inputs",
            )
        y = self.evaluate(np.array([float(inputs[k]) for k in self.input_names]))
        return dict(zip(self.output_names, map(float, y), strict=True))

    # ---------------------------------------------------------------------------- derivatives
    def steps(self, x: np.ndarray, order: int) -> np.ndarray:
        """Finite-difference steps, shape (n_in,), for derivatives of ``order`` 1 or 2.

        h = ε^(1/3) s for central first differences (truncation h² f'''/6 against noise ε f/h)
        and h = ε^(1/4) s for central second differences (h² f''''/12 against 4 ε f/h²), with
        s = max(|x_i|, typical_i) ([1]_ §8.1.1, [2]_ §5.1). The steps are then rounded so that
        x ± h is exactly representable.
        """
        power = {1: 1.0 / 3.0, 2: 0.25}[order]
        scale = np.maximum(np.abs(np.asarray(x, float)), self.typical)
        h = self.noise**power * scale
        return (np.asarray(x, float) + h) - np.asarray(x, float)

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """∂y/∂x, shape (n_out, n_in): analytic if the model has it, else central differences."""
        x = np.asarray(x, dtype=float).reshape(self.n_inputs)
        self.n_jacobians += 1
        if self.analytic_jacobian:
            self.n_evaluations += 1
            J = np.asarray(self.model.jacobian(x.copy()), dtype=float)  # type: ignore[attr-defined]
            return J.reshape(self.n_outputs, self.n_inputs)
        h = self.steps(x, 1)
        J = np.empty((self.n_outputs, self.n_inputs))
        for i in range(self.n_inputs):
            e = np.zeros_like(x)
            e[i] = h[i]
            J[:, i] = (self.evaluate(x + e) - self.evaluate(x - e)) / (2 * h[i])
        return J

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """∂²y/∂x∂x, shape (n_out, n_in, n_in): analytic if available, else central differences
        (the 3-point formula on the diagonal, the 4-point formula off it)."""
        x = np.asarray(x, dtype=float).reshape(self.n_inputs)
        self.n_hessians += 1
        n = self.n_inputs
        if self.analytic_hessian:
            self.n_evaluations += 1
            H = np.asarray(self.model.hessian(x.copy()), dtype=float)  # type: ignore[attr-defined]
            return H.reshape(self.n_outputs, n, n)
        h = self.steps(x, 2)
        f0 = self.evaluate(x)
        H = np.empty((self.n_outputs, n, n))
        E = np.diag(h)
        for i in range(n):
            H[:, i, i] = (self.evaluate(x + E[i]) - 2 * f0 + self.evaluate(x - E[i])) / h[i] ** 2
            for j in range(i):
                d = (
                    self.evaluate(x + E[i] + E[j])
                    - self.evaluate(x + E[i] - E[j])
                    - self.evaluate(x - E[i] + E[j])
                    + self.evaluate(x - E[i] - E[j])
                ) / (4 * h[i] * h[j])
                H[:, i, j] = H[:, j, i] = d
        return H

    def counts(self) -> dict[str, int]:
        """Evaluation counts, for reports."""
        return {
            "evaluations": self.n_evaluations,
            "requests": self.n_requests,
            "jacobians": self.n_jacobians,
            "hessians": self.n_hessians,
        }


def estimate_noise(
    f: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    direction: np.ndarray,
    h: float,
    m: int = 8,
) -> np.ndarray:
    """Relative noise level of each output of ``f`` along a line (Moré & Wild's ECnoise, [3]_).

    Evaluates f at x + i h p, i = 0..m, forms the difference table and, for each output, takes
    the first order k whose estimates σ_k = sqrt(γ_k mean((Δ^k f)²)), γ_k = (k!)²/(2k)!, agree
    within a factor 4 over k, k+1, k+2 while Δ^k f changes sign (differences dominated by noise,
    not by the smooth part). Algorithm 1 of [3].

    Parameters
    ----------
    f : callable
        ``f(x) -> ndarray (n_out,)``.
    x, direction : ndarray, shape (n_in,)
        Base point and direction p.
    h : float
        Spacing along p; small enough that the smooth part of f is a low-order polynomial over
        m h, large enough that the noise is sampled independently (1e-6 relative is typical).
    m : int
        Number of steps (m + 1 evaluations).

    Returns
    -------
    ndarray, shape (n_out,)
        Noise level relative to max |f| along the line; NaN where the table did not settle
        (h too large or too small).
    """
    x = np.asarray(x, float)
    p = np.asarray(direction, float)
    F = np.array([np.asarray(f(x + i * h * p), float).reshape(-1) for i in range(m + 1)])
    out = np.full(F.shape[1], np.nan)
    for j in range(F.shape[1]):
        fj = F[:, j]
        scale = np.max(np.abs(fj))
        if scale == 0 or np.ptp(fj) == 0:
            out[j] = 0.0
            continue
        diffs = [fj]
        sig = np.zeros(m + 1)
        sign_change = np.zeros(m + 1, dtype=bool)
        for k in range(1, m + 1):
            d = np.diff(diffs[-1])
            diffs.append(d)
            gamma = math.factorial(k) ** 2 / math.factorial(2 * k)
            sig[k] = math.sqrt(gamma * float(np.mean(d**2)))
            sign_change[k] = bool(np.any(d > 0) and np.any(d < 0))
        for k in range(1, m - 1):
            trio = sig[k : k + 3]
            if np.all(trio > 0) and trio.max() <= 4 * trio.min() and sign_change[k]:
                out[j] = sig[k] / scale
                break
    return out
