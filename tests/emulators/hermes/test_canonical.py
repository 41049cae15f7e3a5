"""The fingerprint reference vectors (the reference emulator's), and the strict parser's edges."""
import hashlib

import pytest

from emulators.hermes.canonical import (
    InvalidJSONText, LoneSurrogate, canonical, decode_body, fingerprint, parse_strict, scope_hash)

P = '{"input":"synthetic",'
VECTORS = [
    ('{"input":"synthetic","n":0}', P + '"n":0}',
     "aaeab5b9f20e2225d067bd7d2b74e09331d4f7f953e66fb776080c2ce1a96ba1"),
    (P + '"n":-0}', P + '"n":0}',
     "aaeab5b9f20e2225d067bd7d2b74e09331d4f7f953e66fb776080c2ce1a96ba1"),
    (P + '"n":1}', P + '"n":1}',
     "6815ed8cd8e4c7d8561b93c876872bf24e79a8bda3d93dcc1acd0ace74ac294d"),
    (P + '"n":1.0}', P + '"n":1.0}',
     "62063cfbbe0f1196c0b71c1c8f4f8ef04235c176b31a189c49feb9af44597d69"),
    (P + '"n":1e0}', P + '"n":1.0}',
     "62063cfbbe0f1196c0b71c1c8f4f8ef04235c176b31a189c49feb9af44597d69"),
    (P + '"n":-0.0}', P + '"n":-0.0}',
     "d6573c7b98ddbac56c313fc35b88a54e7e3b6f5bf921cc26a331a135b4fea1a8"),
    (P + '"n":9007199254740993}', P + '"n":9007199254740993}',
     "82da8ef7b7d902f1a56e42c75f792c31d01c76a685f710f479d512d687511161"),
    (P + '"n":9007199254740993.0}', P + '"n":9007199254740992.0}',
     "672fa65312aa3eb3e4d9e321d0e8ca6c631d77643a85a91027521a51bba2aa4d"),
    (P + '"n":1e-5}', P + '"n":1e-05}',
     "8f414a542bed02ff95f05c4602f9db1fb5ffbfb4dea1e38dfd50552145ec0584"),
    (P + '"n":1e-4}', P + '"n":0.0001}',
     "f950154f785259dd6fbb662ed27b6071f24ecca95765d6b73ea2e0942ddbd406"),
    (P + '"n":1e15}', P + '"n":1000000000000000.0}',
     "d04ae13f5410e5606bd6e849cd565f8eb54ec1a52a5efd8658e7f4d1bb8f4b02"),
    (P + '"n":1e16}', P + '"n":1e+16}',
     "09a921462b28c41400fafddb3a9a3ca45bcd42a06b2c623144fe5876cbf9e70c"),
    (P + '"n":1e20}', P + '"n":1e+20}',
     "f27e880c47156b3eccdc3392336f549123d881677ca5984813d4076ded68ba5b"),
    (P + '"n":1e21}', P + '"n":1e+21}',
     "2612bb589df1a9c2663f2719246c78ebf2b8f16a73958673209452ff1390c3d1"),
    (P + '"n":1e23}', P + '"n":1e+23}',
     "ddb64a43f39cb6d2f784d193c8cc6aae898fa4e39d963c7cad8a2adbcf3fda38"),
    (P + '"n":5e-324}', P + '"n":5e-324}',
     "b07012b8e069e9a4d8064c5253a8b667dbdaec589f051c46c1159267ffad08c6"),
    (P + '"n":2.2250738585072014e-308}', P + '"n":2.2250738585072014e-308}',
     "3cdf28007cbe7bd7d9b36eaacaede1ef2dbb47419b6d2c2c0f6be0395fc4726d"),
    (P + '"n":1.7976931348623157e308}', P + '"n":1.7976931348623157e+308}',
     "d709b205848808fa3eab862055591bb130496c9de1cd574257feb7b8c2c1f331"),
    (P + '"n":1e999}', P + '"n":Infinity}',
     "930504d6c73d2dfbaf4d3377e60cafe0ee32ed9a7bbeee059ef889f9effdb4ad"),
    (P + '"n":-1e999}', P + '"n":-Infinity}',
     "58a02e1eb88d2f46f69f13ee3d3ac49fbbc20654c30f6625856f6518b2a7e684"),
    (P + '"n":1e-999}', P + '"n":0.0}',
     "01c35824622b47e5987bd79cfeedd886284f6830b713f3d3f85cda30399ba310"),
    (P + '"\\ue000":1,"\\ud800\\udc00":2}', P + '"\ue000":1,"\U00010000":2}',
     "ddb8538c9fdbd563e6e06c99658667688b5bcc3b47862e970126afaeb1a7ae13"),
    (P + '"s":"\\u00e9\\n\\t\\b\\u0000"}', P + '"s":"\u00e9\\n\\t\\b\\u0000"}',
     "ec78e03acb5969df233c65e47fb7e7b06e9fdad16caa29a346a151ac9220628f"),
    (P + '"x":1,"x":2.0}', P + '"x":2.0}',
     "39c29b7c83b333a8fe3fb7521a6c62adbcbf9492a7c928c640771e816783bed5"),
    (P + '"__proto__":{"value":true}}', '{"__proto__":{"value":true},"input":"synthetic"}',
     "8092945bbe6c1b66dc606f1fc6617f7bef3ec78d2d7a9ca463949559a2f68462"),
]


@pytest.mark.parametrize("raw,body,digest", VECTORS, ids=[str(i + 1) for i in range(len(VECTORS))])
def test_reference_vector(raw, body, digest):
    parsed = parse_strict(raw)
    text = canonical({"body": parsed, "gateway_session_key": "memory"})
    assert text == '{"body":' + body + ',"gateway_session_key":"memory"}'
    assert fingerprint(parsed, "memory") == digest
    assert hashlib.sha256(text.encode()).hexdigest() == digest


@pytest.mark.parametrize("raw", ["", "   ", "NaN", '{"n":NaN}', '{"n":Infinity}', '{"n":-Infinity}',
                                 '{"a":1,}', "{'a':1}", '{"a":1}/*c*/', "[1,]"])
def test_non_strict_json_is_rejected(raw):
    with pytest.raises(InvalidJSONText):
        parse_strict(raw)


def test_lone_surrogate_cannot_be_fingerprinted():
    with pytest.raises(LoneSurrogate):
        fingerprint(parse_strict('{"input":"\\ud800"}'), "")


def test_decode_drops_bom_and_replaces_invalid_bytes():
    assert decode_body(b'\xef\xbb\xbf{"a":"\xff"}') == '{"a":"\ufffd"}'


def test_default_scope_hash():
    assert scope_hash("default", "unauthenticated-test-listener") == (
        "845264e061c6175ac63594c814e4c557f82d402d80b8e6a01e1568a41c9e6cf0")
