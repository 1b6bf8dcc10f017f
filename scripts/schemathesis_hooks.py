"""Schemathesis hooks for scripts/test-schemathesis.

An append's body (PATCH /v1/uploads/{id}) is raw bytes of the media type
the resumable-upload draft names, application/partial-upload: serialized
as application/octet-stream is.
"""
import schemathesis

schemathesis.serializer.alias("application/partial-upload", "application/octet-stream")
