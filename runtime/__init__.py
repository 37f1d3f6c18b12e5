"""What generated code and tapes call at run time. Imports numpy only, never the compiler.

Generated modules do ``from s2sgrad.runtime import unbroadcast, ...``: every helper a rule
template names is exported here.
"""

from . import rules
from .activations import *  # noqa: F403
from .activations import __all__ as _activation_all
from .adjoint_helpers import *  # noqa: F403  (re-export: generated code imports these names)
from .adjoint_helpers import __all__ as _adjoint_all
from .array_helpers import *  # noqa: F403
from .array_helpers import __all__ as _array_all
from .assembly_helpers import *  # noqa: F403
from .assembly_helpers import __all__ as _assembly_all
from .boundaries import *  # noqa: F403
from .boundaries import __all__ as _boundary_all
from .containers import *  # noqa: F403
from .containers import __all__ as _container_all
from .cumulative_products import *  # noqa: F403
from .cumulative_products import __all__ as _cumulative_all
from .fft_helpers import *  # noqa: F403
from .fft_helpers import __all__ as _fft_all
from .helper_tangents import *  # noqa: F403
from .helper_tangents import __all__ as _helper_tangent_all
from .iteration import *  # noqa: F403
from .iteration import __all__ as _iteration_all
from .matrix_helpers import *  # noqa: F403
from .matrix_helpers import __all__ as _matrix_all
from .moved_elements import *  # noqa: F403
from .moved_elements import __all__ as _moved_all
from .registry import Registry, Rule, qualified_name, registry
from .special_helpers import *  # noqa: F403
from .special_helpers import __all__ as _special_all
from .tangent_helpers import *  # noqa: F403
from .tangent_helpers import __all__ as _tangent_all

__all__ = [
    "Registry",
    "Rule",
    "qualified_name",
    "registry",
    "rules",
    *_activation_all,
    *_adjoint_all,
    *_array_all,
    *_assembly_all,
    *_boundary_all,
    *_container_all,
    *_cumulative_all,
    *_fft_all,
    *_helper_tangent_all,
    *_iteration_all,
    *_matrix_all,
    *_moved_all,
    *_special_all,
    *_tangent_all,
]
