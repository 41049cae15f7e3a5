"""runtime/intercept.py over a bare WSGI app: a drop before the answer and one midway are the
client library's own errors, a route takes only whole path segments, and the patches go when
the last route does."""
import asyncio

import httpx
import httpx2
import pytest
import requests
from requests.adapters import HTTPAdapter

from emulators.runtime.errors import DroppedByFault
from emulators.runtime.intercept import ROUTES, Route


def app(environ, start_response):
    """`/lost`: no answer; `/half`: one chunk, then the connection goes; else the path back."""
    if environ["PATH_INFO"] == "/lost":
        raise DroppedByFault()
    start_response("200 OK", [("content-type", "text/plain")])
    if environ["PATH_INFO"] == "/half":
        def half():
            yield b"first "
            raise DroppedByFault()
        return half()
    return [f'{environ["SCRIPT_NAME"]}|{environ["PATH_INFO"]}|{environ["HTTP_HOST"]}'.encode()]


@pytest.fixture
def route():
    route = Route("https://svc.example/api", app)
    ROUTES.add(route)
    yield "https://svc.example/api"
    ROUTES.remove(route)
    assert HTTPAdapter.send.__module__ == "requests.adapters"


def test_a_route_takes_its_prefix_by_whole_segments(route):
    assert requests.get(route + "/x").text == "/api|/x|svc.example"
    assert ROUTES.find("GET", "https://svc.example/apix") is None  # left to the network
    assert ROUTES.find("GET", "https://SVC.example:443/api") is not None


def test_a_lost_answer_is_each_librarys_connection_error(route):
    with pytest.raises(requests.ConnectionError, match="Connection aborted"):
        requests.get(route + "/lost")
    for module in (httpx, httpx2):
        with pytest.raises(module.RemoteProtocolError, match="without sending a response"):
            module.get(route + "/lost")

    async def lost():
        async with httpx.AsyncClient() as client:
            await client.get(route + "/lost")
    with pytest.raises(httpx.RemoteProtocolError):
        asyncio.run(lost())


def test_a_drop_midway_breaks_the_stream_as_a_connection_would(route):
    with requests.get(route + "/half", stream=True) as answer:
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            answer.content
    with httpx.stream("GET", route + "/half") as answer:
        with pytest.raises(httpx.RemoteProtocolError):
            answer.read()

    async def half():
        async with httpx2.AsyncClient() as client:
            async with client.stream("GET", route + "/half") as answer:
                return [chunk async for chunk in answer.aiter_bytes()]
    with pytest.raises(httpx2.RemoteProtocolError):
        asyncio.run(half())


def test_a_bad_base_url_is_refused_where_it_is_written():
    with pytest.raises(ValueError, match="http:// or https://"):
        Route("ftp://svc.example", app)
