from .producer import Producer

__all__ = ["Producer"]
