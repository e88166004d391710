"""Sending a file region to a connection's socket with ``os.sendfile`` (zero-copy fetch).

The event loop is uvloop, whose transports have no ``sendfile`` (``loop.sendfile``
raises NotImplementedError) and which refuses ``add_writer`` on a descriptor a
transport owns. So the sender works on its own duplicate of the socket's
descriptor: once the transport's buffer is empty (the bytes before the region
are out), it calls ``os.sendfile`` on the socket until the kernel's send buffer
is full, then waits for a duplicate of the socket's descriptor to become
writable (the duplicate lives for that one region only). The transport is not written to
meanwhile (the connection answers one request at a time) and goes on reading.

A response with little file data is not sent this way: ``joined_frame`` reads it into one
buffer for a single write (see ``COPY_REGIONS_UP_TO``).

Where sendfile cannot be used (a TLS transport: its bytes must be encrypted;
or the kernel refuses), ``usable`` turns False and the caller copies instead.
"""

from __future__ import annotations

import asyncio
import errno
import os

from weir.protocol.response_pieces import ResponsePieces

#: A response with at most this many bytes of file regions is read and sent as one write: for a
#: small fetch (a consumer keeping up) one send and one wake-up of the client cost less than the
#: copy; header, sendfile and tail as separate sends cost three of each (issue 23, latency).
COPY_REGIONS_UP_TO = 64 * 1024

# Refusals that mean "not with this socket or file", not a broken connection.
_NOT_SUPPORTED = (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSOCK)


class RegionSender:
    def __init__(self, transport: asyncio.Transport) -> None:
        sock = transport.get_extra_info("socket")
        self.usable = sock is not None and transport.get_extra_info("sslcontext") is None
        self._sock_fd = sock.fileno() if self.usable else -1
        # Bytes the kernel has taken through sendfile, ever: the connection's idle check reads it,
        # since a client reading a long region never touches the transport.
        self.sent_total = 0

    async def send(self, fd: int, position: int, length: int) -> int:
        """Send ``length`` bytes of ``fd`` from ``position``; bytes sent (fewer: the file is shorter).

        Raises OSError when the connection breaks; NotImplementedError (``usable`` is then False)
        when sendfile is refused before any byte went out.
        """
        out = self._sock_fd
        sent = 0
        waiter = None  # the duplicate descriptor to wait on, made when the socket is first full
        try:
            while sent < length:
                try:
                    n = os.sendfile(out, fd, position + sent, length - sent)
                except BlockingIOError:
                    if waiter is None:
                        # from now on through the duplicate: the transport may close its descriptor
                        # while we wait, and the number be reused by another file
                        waiter = out = os.dup(out)
                    await self._writable(waiter)
                    continue
                except OSError as exc:
                    if exc.errno in _NOT_SUPPORTED and not sent:
                        self.usable = False
                        raise NotImplementedError(f"sendfile refused: {exc}") from None
                    raise
                if n == 0:  # end of file before the region's end
                    break
                sent += n
                self.sent_total += n
        finally:
            if waiter is not None:
                os.close(waiter)
        return sent

    @staticmethod
    async def _writable(fd: int) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_writer(fd, wake)
        try:
            await ready
        finally:
            loop.remove_writer(fd)


def joined_frame(response: ResponsePieces) -> bytearray | None:
    """The whole frame of ``response``, its regions read (a pread each) and released; None when
    the file was cut under a region (sent, the frame would be broken)."""
    frame = bytearray()
    try:
        for piece in response.pieces():
            if type(piece) is memoryview:
                frame += piece
                continue
            region = piece[0]
            data = region.read()
            if len(data) != region.length:
                return None
            frame += data
    finally:
        response.release()
    return frame
