"""memory-core: one async API for AI-agent conversation memory.

Open a backend by URL and use it as an async context manager::

    from memory_core import open_backend

    async with open_backend("memory://") as memory:
        await memory.add_message("session-1", "user", "Hello")
        conversation = await memory.get_conversation("session-1")
"""

from .backend import Extractor, MemoryBackend
from .capabilities import Capabilities
from .embedding import Embedder, HashingEmbedder
from .erasure import ErasureReport
from .errors import (
    AuthenticationError,
    CapabilityWarning,
    ConfigurationError,
    ConflictError,
    ForeignDataWarning,
    InvalidArgumentTypeError,
    InvalidRequestError,
    MemoryCoreError,
    MissingIdentifierError,
    NotFoundError,
    NotSupportedError,
    RateLimitedError,
    SessionRequiredError,
    StoreError,
    TransportError,
)
from .limits import DEFAULT_LIMITS, Limits
from .models import (
    Conversation,
    ConversationPage,
    ConversationSummary,
    Entity,
    EntityRef,
    EntityType,
    ExtractionStatus,
    Fact,
    Message,
    MessageRole,
    Preference,
    ReasoningStep,
    ReasoningTrace,
    Relationship,
    SessionInfo,
    ToolCall,
    ToolCallStatus,
    ToolStats,
    TracePage,
)
from .open import open_backend
from .registry import known_schemes, register_backend, store_class
from .retention import ExpiryReport
from .settings import Settings
from .stats import StoreStats, UserStats
from .turns import (
    MemoryAgent,
    OpenedTurn,
    Reply,
    TurnConflictError,
    TurnContext,
    TurnIncompleteError,
    TurnMemory,
    TurnNotOpenError,
    TurnReasoning,
    TurnResult,
    TurnStep,
    TurnToolCall,
    with_memory,
)
from .version import VERSION

__version__ = VERSION

__all__ = [
    "DEFAULT_LIMITS",
    "AuthenticationError",
    "Capabilities",
    "CapabilityWarning",
    "ConfigurationError",
    "ConflictError",
    "Conversation",
    "ConversationPage",
    "ConversationSummary",
    "Embedder",
    "Entity",
    "EntityRef",
    "EntityType",
    "ErasureReport",
    "ExpiryReport",
    "ExtractionStatus",
    "Extractor",
    "Fact",
    "ForeignDataWarning",
    "HashingEmbedder",
    "InvalidArgumentTypeError",
    "InvalidRequestError",
    "Limits",
    "MemoryAgent",
    "MemoryBackend",
    "MemoryCoreError",
    "Message",
    "MessageRole",
    "MissingIdentifierError",
    "NotFoundError",
    "NotSupportedError",
    "OpenedTurn",
    "Preference",
    "RateLimitedError",
    "ReasoningStep",
    "ReasoningTrace",
    "Relationship",
    "Reply",
    "SessionInfo",
    "SessionRequiredError",
    "Settings",
    "StoreError",
    "StoreStats",
    "ToolCall",
    "ToolCallStatus",
    "ToolStats",
    "TracePage",
    "TransportError",
    "TurnConflictError",
    "TurnContext",
    "TurnIncompleteError",
    "TurnMemory",
    "TurnNotOpenError",
    "TurnReasoning",
    "TurnResult",
    "TurnStep",
    "TurnToolCall",
    "UserStats",
    "__version__",
    "known_schemes",
    "open_backend",
    "register_backend",
    "store_class",
    "with_memory",
]
