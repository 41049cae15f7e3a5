"""The private names of gunicorn and dulwich that the code relies on still mean, in the installed
versions, what the code expects of them. A failure names the private API, the code that uses it
and what moved. setup.cfg bounds both packages below the next release that could move them;
tests/integration/test_gunicorn_bounds.py and test_dulwich_bounds.py run this file on the lowest
and the newest release those bounds allow."""
import ast
import builtins
import inspect
import textwrap
from importlib.metadata import version
from types import SimpleNamespace

from dulwich import server as dulwich_server
from gunicorn.http import wsgi

# What dulwich's UploadPackHandler.handle uses in the releases setup.cfg allows (1.2.20, 1.2.21;
# the same since 1.2.0): emulators/github/transport.py's _UploadPack.handle is a modified copy.
UPLOAD_PACK_HANDLE_USES = frozenset((
    "CAPABILITY_NO_DONE", "CombineFilter", "SparseOidFilter", "TreeDepthFilter",
    "_ProtocolGraphWalker", "filter_pack_objects", "filter_pack_objects_with_paths",
    "write_pack_from_container", ".determine_wants", ".extend", ".handle_done",
    "self._done_received", "self._processing_have_lines", "self._start_pack_send_phase",
    "self.filter_spec", "self.get_tagged", "self.has_capability", "self.progress",
    "self.proto.write_pkt_line", "self.repo.find_missing_objects", "self.repo.get_peeled",
    "self.repo.object_format", "self.repo.object_store", "self.repo.refs.get_symrefs",
    "self.write_pack_data"))


def moved(package, name, user, what):
    """The failure message: which private API moved, who uses it, what to do."""
    return (f"{package} {version(package)}: {name} (used by {user}) {what}; adapt that code, "
            f"then move setup.cfg's bound on {package}")


def parameters(function):
    return list(inspect.signature(function).parameters)


def source_of(cls):
    """The source of `cls` and of the classes of its package it inherits from."""
    package = cls.__module__.split(".")[0]
    return "".join(inspect.getsource(base) for base in cls.__mro__
                   if base.__module__.split(".")[0] == package)


def uses(function):
    """What a function's body uses: global names, `self.` chains, and methods called on other
    objects (as `.name`); annotations and the function's own locals left out."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, ast.FunctionDef):
            node.returns = None
        elif isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(None)
    local = {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    local |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    local |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n is not tree}
    found, inner = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            chain, base = [], node
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                inner.add(id(base.value))
                base = base.value
            if isinstance(base, ast.Name) and base.id == "self":
                found.add(".".join(["self", *reversed(chain)]))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if not (isinstance(node.func.value, ast.Name) and node.func.value.id == "self") \
                    and isinstance(node.func.value, ast.Name):
                found.add("." + node.func.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                and node.id not in local and not hasattr(builtins, node.id):
            found.add(node.id)
    return found


class Socket:
    def __init__(self):
        self.sent = b""

    def sendall(self, data):
        self.sent += data


def test_gunicorns_early_hints_callback_still_sends_a_103():
    name = "gunicorn.http.wsgi._make_early_hints_callback"
    user = "spaces/serving/worker.py (wsgi.early_hints of a lean request)"
    make = getattr(wsgi, "_make_early_hints_callback", None)
    assert make is not None, moved("gunicorn", name, user, "is gone")
    assert parameters(make) == ["req", "sock", "resp"], \
        moved("gunicorn", name, user, f"takes {parameters(make)}, not (req, sock, resp)")
    sock = Socket()
    hints = make(SimpleNamespace(version=(1, 1)), sock, SimpleNamespace(headers_sent=False))
    hints([("Link", "</chat.css>; rel=preload; as=style")])
    assert sock.sent == b"HTTP/1.1 103 Early Hints\r\nLink: </chat.css>; rel=preload; as=style" \
                        b"\r\n\r\n", moved("gunicorn", name, user, f"sent {sock.sent!r}")


def test_dulwichs_protocol_graph_walker_is_built_and_read_as_transport_does():
    name = "dulwich.server._ProtocolGraphWalker"
    user = "emulators/github/transport.py (_UploadPack.handle, _deepen)"
    walker = getattr(dulwich_server, "_ProtocolGraphWalker", None)
    assert walker is not None, moved("dulwich", name, user, "is gone")
    assert parameters(walker.__init__) == ["self", "handler", "object_store", "get_peeled",
                                           "get_symrefs"], \
        moved("dulwich", name, user, f"takes {parameters(walker.__init__)}")
    for method in ("determine_wants", "handle_done", "update_shallow"):
        assert callable(getattr(walker, method, None)), \
            moved("dulwich", f"{name}.{method}", user, "is gone")
    for attribute in ("shallow", "unshallow"):
        assert f"self.{attribute} = " in source_of(walker) or \
            f"self.{attribute}: " in source_of(walker), \
            moved("dulwich", f"{name}.{attribute}", user, "is no longer set")


def test_dulwichs_upload_pack_internals_that_transport_uses_are_there():
    handler = dulwich_server.UploadPackHandler
    user = "emulators/github/transport.py (_UploadPack.handle)"
    send = getattr(handler, "_start_pack_send_phase", None)
    assert send is not None and parameters(send) == ["self"], \
        moved("dulwich", "UploadPackHandler._start_pack_send_phase", user,
              "is gone or takes arguments")
    for attribute in ("_done_received", "_processing_have_lines"):
        assert f"self.{attribute} = " in source_of(handler), \
            moved("dulwich", f"UploadPackHandler.{attribute}", user, "is no longer set")


def test_dulwichs_upload_pack_handle_is_still_the_one_transport_copied():
    found = uses(dulwich_server.UploadPackHandler.handle)
    added, gone = sorted(found - UPLOAD_PACK_HANDLE_USES), sorted(UPLOAD_PACK_HANDLE_USES - found)
    assert not added and not gone, moved(
        "dulwich", "UploadPackHandler.handle",
        "emulators/github/transport.py (_UploadPack.handle, a modified copy of it)",
        f"changed: it now uses {added} and no longer {gone}; bring the change into the copy")


def test_dulwichs_receive_pack_still_calls_the_apply_pack_transport_overrides():
    handler = dulwich_server.ReceivePackHandler
    name = "ReceivePackHandler._apply_pack"
    user = "emulators/github/transport.py (_ReceivePack._apply_pack overrides it)"
    apply = getattr(handler, "_apply_pack", None)
    assert apply is not None and parameters(apply) == ["self", "refs"], \
        moved("dulwich", name, user, "is gone or takes other arguments")
    assert "list(self._apply_pack(client_refs))" in inspect.getsource(handler.handle), \
        moved("dulwich", name, user, "is no longer how handle() applies a push")
