"""Git's smart HTTP protocol over a repository's objects and refs, run by dulwich.

dulwich's `UploadPackHandler` negotiates and writes packs (clone, fetch, ls-remote) and its
`ReceivePackHandler` reads pushes; here they get a repository view (objects from SQLite, the
refs GitHub advertises) and a push's ref updates go to `apply`, which is
`RefRules.push` (models/refs.py): the same path as `git/update-ref`. No HTTP framework here.
"""
import gzip
import io
import queue
import threading
import zlib

from dulwich.errors import (ApplyDeltaError, ChecksumMismatch, GitProtocolError,
                            HangupException, ObjectFormatException)
from dulwich.protocol import ReceivableProtocol
from dulwich.objects import valid_hexsha
from dulwich.refs import DictRefsContainer
from dulwich.repo import BaseRepo
from dulwich.object_filters import (CombineFilter, SparseOidFilter, TreeDepthFilter,
                                    filter_pack_objects, filter_pack_objects_with_paths)
from dulwich.protocol import (CAPABILITY_ATOMIC, CAPABILITY_NO_DONE, CAPABILITY_SIDE_BAND_64K,
                              SIDE_BAND_CHANNEL_PROGRESS)
from dulwich.server import (DictBackend, ReceivePackHandler, UploadPackHandler,
                            _ProtocolGraphWalker)

from .shallow import REFUSED, Refused, refused_updates
from .shallow import Request as ShallowRequest

UPLOAD, RECEIVE = "git-upload-pack", "git-receive-pack"
ZERO = b"0" * 40
_QUEUED = 64  # pkt-lines (up to 64 kB each) a clone's writer may run ahead of its reader
_DONE = object()
_UNPACK_ERRORS = (OSError, ChecksumMismatch, ApplyDeltaError, AssertionError, zlib.error,
                  ObjectFormatException)


class RepoView(BaseRepo):
    """What dulwich's handlers see of one repository: its object store and its refs
    (`{ref: sha}` bytes, `HEAD` a symbolic ref to the default branch when it exists)."""

    def __init__(self, store, refs, default_branch):
        container = DictRefsContainer(dict(refs))
        head = b"refs/heads/" + default_branch.encode()
        if head in refs:
            container.set_symbolic_ref(b"HEAD", head)
        super().__init__(store, container)


class _UploadPack(UploadPackHandler):
    """dulwich's upload-pack, sending the stored pack entries of the objects to send.

    `handle` is dulwich's own, except that the objects come from `ObjectStore.objects_to_send`
    and the pack from `ObjectStore.write_pack`, which sends stored entries and deltas as they
    are (dulwich would parse every tree entry in Python, recompress every object and send no
    delta), and that the request's shallow lines are answered by shallow.py; a partial
    clone's filter is dulwich's.
    """

    # GitHub lets a client ask for any object it can reach (a partial clone fetches missing
    # blobs by id); dulwich accepts only advertised tips, so asked-for ids that the repository
    # holds are added to the refs it checks wants against (`wanted`, read from the request)
    wanted = ()
    shallow = None  # the request's shallow lines (shallow.py answers them), when it has any

    def capabilities(self):
        return [*super().capabilities(), b"allow-tip-sha1-in-want",
                b"allow-reachable-sha1-in-want", b"deepen-since", b"deepen-not",
                b"deepen-relative"]

    def handle(self):
        self._processing_have_lines = True
        store = self.repo.object_store
        graph_walker = _ProtocolGraphWalker(self, store, self.repo.get_peeled,
                                            self.repo.refs.get_symrefs)
        wants = []

        def wants_wrapper(refs, depth=None):
            tips = set(refs.values())
            for sha in self.wanted:  # git answers the first id it does not hold so
                if valid_hexsha(sha) and sha not in tips and sha not in store:
                    raise Refused(f"upload-pack: not our ref {sha.decode()}")
            extra = [sha for sha in self.wanted if sha not in tips and sha in store]
            refs = {**refs, **{b"refs/mockingbird/wanted/%d" % n: sha
                               for n, sha in enumerate(extra)}}
            wants.extend(graph_walker.determine_wants(refs, depth))
            if self.shallow is not None:
                self._deepen(graph_walker, refs)
            return wants
        finder = self.repo.find_missing_objects(wants_wrapper, graph_walker, self.progress,
                                                get_tagged=self.get_tagged)
        if not wants or finder is None:
            return
        object_ids = store.objects_to_send(finder)
        if not graph_walker.handle_done(not self.has_capability(CAPABILITY_NO_DONE),
                                        self._done_received):
            return
        self._start_pack_send_phase()
        if self.filter_spec is not None:
            object_ids = _filtered(store, wants, object_ids, self.filter_spec)
        self.progress(f"counting objects: {len(object_ids)}, done.\n".encode("ascii"))
        store.write_pack(self.write_pack_data, object_ids, have=finder.get_remote_has())
        self.proto.write_pkt_line(None)

    def _deepen(self, graph_walker, refs):
        """Answer the shallow lines right after the wants, as git does; the pack walk then
        stops at the client's boundary (dulwich reads `shallow` and `unshallow` from the
        walker, and sends whole history down to that boundary: no haves count then)."""
        request = ShallowRequest(self.shallow, self.has_capability(b"deepen-relative"))
        new, unshallow, stop = request.answer(self.repo.object_store, refs, self.wanted)
        graph_walker.shallow.update(stop)
        graph_walker.unshallow = unshallow
        if request.deepens:
            graph_walker.update_shallow(new, unshallow)


def _filtered(store, wants, object_ids, spec):
    """Apply a partial clone's filter (`--filter=blob:none`, `tree:0`...) as dulwich does;
    an object asked for by id is always sent (how a partial clone fetches a missing blob)."""
    if _needs_paths(spec):
        kept = {sha.encode() if isinstance(sha, str) else sha
                for sha in filter_pack_objects_with_paths(store, wants, spec)}
    else:
        kept = set(filter_pack_objects(store, object_ids, spec))
    kept.update(wants)
    return [sha for sha in object_ids if sha in kept]


def _needs_paths(spec):
    if isinstance(spec, (TreeDepthFilter, SparseOidFilter)):
        return True
    return isinstance(spec, CombineFilter) and any(_needs_paths(f) for f in spec.filters)


class _ReceivePack(ReceivePackHandler):
    """receive-pack whose ref updates all go to `apply(commands, atomic)` at once, after the
    pack is stored (objects are immutable rows: a push refused later leaves them unreachable,
    as git's own receive-pack does). A push from a shallow clone is taken as git takes it
    (shallow.py)."""

    def __init__(self, backend, args, proto, *, apply, max_input, **kwargs):
        super().__init__(backend, args, proto, **kwargs)
        self._apply = apply
        self._max_input = max_input
        self._shallow = set()

    def handle(self):
        if not self.advertise_refs:
            self._shallow = _shallow_lines(self.proto)
        super().handle()

    def _apply_pack(self, refs):
        if any(new != ZERO for _old, new, _ref in refs):
            try:
                self.repo.object_store.add_thin_pack(
                    self.proto.read, getattr(self.proto, "recv", None),
                    max_input_size=self._max_input)
            except _UNPACK_ERRORS as exc:
                yield b"unpack", str(exc).replace("\n", " ").encode()
                return
        yield b"unpack", b"ok"
        commands = [(old.decode(), new.decode(), ref.decode()) for old, new, ref in refs]
        refused = refused_updates(
            self.repo.object_store, self.repo.get_refs().values(), self._shallow,
            [(new, ref) for _old, new, ref in refs if new != ZERO])
        # git's receive-pack leaves such a ref out and applies the others, --atomic or not
        kept = [c for c in commands if c[2].encode() not in refused]
        statuses = dict(self._apply(kept, self.has_capability(CAPABILITY_ATOMIC))) \
            if kept else {}
        for _old, _new, ref in commands:
            status = REFUSED if ref.encode() in refused else statuses[ref]
            # a status's further lines are said to the user first (`remote: error: ...`)
            reason, *lines = status.split("\n")
            if lines and self.has_capability(CAPABILITY_SIDE_BAND_64K):
                for line in lines:
                    self.proto.write_sideband(SIDE_BAND_CHANNEL_PROGRESS,
                                              f"error: {line}\n".encode())
            yield ref.encode(), reason.encode()


def _shallow_lines(proto):
    """Read the `shallow <id>` lines a shallow clone sends before a push's commands
    (pack-protocol: `update-request = *shallow command-list [packfile]`), which dulwich's
    receive-pack does not expect, and leave the first command to it: the ids."""
    found = set()
    line = proto.read_pkt_line()
    while line is not None and line.startswith(b"shallow "):
        sha = line[8:].rstrip(b"\n")
        if not valid_hexsha(sha):
            raise GitProtocolError(f"protocol error: expected shallow sha, got {sha!r}")
        found.add(sha)
        line = proto.read_pkt_line()
    proto.unread_pkt_line(line)
    return found


def body_reader(environ):
    """Return `read(n)` over a request body (git gzips large upload-pack requests)."""
    stream = environ["wsgi.input"]
    if environ.get("HTTP_CONTENT_ENCODING", "").lower() in ("gzip", "x-gzip"):
        return gzip.GzipFile(fileobj=stream, mode="rb").read
    return stream.read


def advertise(service, view):
    """Return the body of `GET info/refs?service=<service>`: the refs and capabilities."""
    out = []
    proto = ReceivableProtocol(lambda n: b"", _writer(out))
    proto.write_pkt_line(f"# service={service}\n".encode())
    proto.write_pkt_line(None)
    _handler(service, view, proto, advertise_refs=True).handle()
    return out


def serve(service, view, read, *, apply=None, max_input=None):
    """Run one stateless smart-HTTP request (`POST <service>`: a push) and return its body
    chunks (a push's answer is a short status report)."""
    out = []
    proto = ReceivableProtocol(read, _writer(out))
    handler = _handler(service, view, proto, apply=apply, max_input=max_input)
    try:
        handler.handle()
    except (HangupException, GitProtocolError) as exc:
        raise ProtocolError(str(exc)) from exc
    return out


def stream(view, read):
    """Run an upload-pack request in a thread of its own and yield its body as it is written
    (a clone's pack is never whole in memory; a slow reader holds back the writer).

    A request upload-pack refuses is answered with git's ERR pkt-line; one that is not git's
    protocol raises ProtocolError here, before the first chunk."""
    chunks = queue.Queue(maxsize=_QUEUED)
    cancelled = threading.Event()

    def put(item):
        while not cancelled.is_set():
            try:
                chunks.put(item, timeout=0.5)
                return
            except queue.Full:
                continue
        raise HangupException()  # the client went away: stop walking and reading

    def write(data):
        put(bytes(data))
        return len(data)

    def run():
        try:
            wanted, shallow, body = _request(read())
            proto = ReceivableProtocol(io.BytesIO(body).read, write)
            handler = _handler(UPLOAD, view, proto)
            handler.wanted = wanted
            handler.shallow = shallow or None
            try:
                handler.handle()
            except Refused as exc:  # git's upload-pack says why in an ERR pkt-line (HTTP 200)
                proto.write_pkt_line(f"ERR {exc}".encode())
            put(_DONE)
        except BaseException as exc:  # handed to the reader, which raises it
            try:
                put(exc)
            except HangupException:
                pass
    threading.Thread(target=run, name="upload-pack", daemon=True).start()
    first = chunks.get()
    if isinstance(first, (HangupException, GitProtocolError)):
        raise ProtocolError(str(first)) from first
    if isinstance(first, BaseException):
        raise first
    return _drain(first, chunks, cancelled)


def _drain(first, chunks, cancelled):
    try:
        item = first
        while item is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item
            item = chunks.get()
    finally:
        cancelled.set()


def _request(body):
    """Split an upload-pack request body: the ids of its `want` lines, its shallow lines
    (`shallow`, `deepen*`, before the first flush) and the body without those lines."""
    wanted, shallow, kept, at, first = [], [], [], 0, True
    while at + 4 <= len(body):
        try:
            size = int(body[at:at + 4], 16)
        except ValueError:
            break
        line = body[at + 4:at + size] if size > 4 else b""
        end = at + max(size, 4)
        if line.startswith(b"want "):
            wanted.append(line[5:45])
        if first and line.split(b" ", 1)[0].rstrip(b"\n") in ShallowRequest.COMMANDS:
            shallow.append(line)
        else:
            kept.append(body[at:end])
        first = first and size != 0
        at = end
    return wanted, shallow, b"".join(kept) + body[at:]


class ProtocolError(Exception):
    """The client spoke something that is not git's protocol (answered 400)."""


def _writer(out):
    def write(data):
        out.append(bytes(data))
        return len(data)
    return write


def _handler(service, view, proto, *, advertise_refs=False, apply=None, max_input=None):
    backend = DictBackend({"/": view})
    if service == UPLOAD:
        return _UploadPack(backend, ["/"], proto, stateless_rpc=True,
                           advertise_refs=advertise_refs)
    return _ReceivePack(backend, ["/"], proto, stateless_rpc=True,
                        advertise_refs=advertise_refs, apply=apply, max_input=max_input)
