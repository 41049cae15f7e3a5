"""An App signs in with an RS256 JWT: checked with its public key on the emulator's clock,
with GitHub's rules and GitHub's words for each refusal.

What GitHub checks, in the order it answers (its messages, as octokit's clock-skew retry and
users' reports quote them): a token it can decode and verify with the key of the App its
`iss` names (the App's id, as a number or a string, or its client id); an `exp` that is a
number in the future and at most ten minutes after GitHub's now (its docs: "no more than 10
minutes into the future"; clients whose clocks run ahead meet this one first); an `iat` that
is an integer not after GitHub's now (DRIFT_S allowed, chosen here: GitHub does not say how
much). PyJWT verifies the signature only; the claims are checked here, on the emulator's
clock, so `POST /__admin/clock` and a frozen clock move them.
"""
import jwt

from .. import errors

MAX_LIFETIME_S = 600
DRIFT_S = 60  # how far ahead of the emulator's clock `iat` may be
UNDECODABLE = "A JSON web token could not be decoded"
EXPIRED = ("'Expiration time' claim ('exp') must be a numeric value representing the future"
           " time at which the assertion expires")
TOO_LONG = "'Expiration time' claim ('exp') is too far in the future"
BAD_IAT = ("'Issued at' claim ('iat') must be an Integer representing the time that the"
           " assertion was issued")
NO_ISSUER = "Missing 'issuer' claim ('iss') in assertion"
BAD_ISSUER = "'Issuer' claim ('iss') must be an Integer"
# the signature alone: GitHub's rules for the claims are applied below, on the emulator's clock
_SIGNATURE_ONLY = {"verify_signature": True, "verify_exp": False, "verify_nbf": False,
                   "verify_iat": False, "verify_aud": False, "verify_iss": False,
                   "verify_sub": False, "verify_jti": False, "require": []}


def refuse(message):
    return errors.Unauthorized(message)


def looks_like_jwt(token):
    """Tell whether a bearer token is shaped as a JWT (three segments, a JSON header naming an
    algorithm): such a token is an App's sign-in, checked as one."""
    if token.count(".") != 2:
        return False
    try:
        return "alg" in jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        return False


def issuer(claims):
    """(field, value) to find the App `iss` names: its id or its client id."""
    iss = claims.get("iss")
    if iss is None:
        raise refuse(NO_ISSUER)
    if isinstance(iss, int) and not isinstance(iss, bool):
        return "id", iss
    if isinstance(iss, str) and iss.isascii() and iss.isdigit():
        return "id", int(iss)
    if isinstance(iss, str) and iss:
        return "client_id", iss
    raise refuse(BAD_ISSUER)


def verify(token, now_s, find_app):
    """Return the App record a JWT signs in as, or raise GitHub's 401. `find_app(field,
    value)` looks an App up by `id` or `client_id` (None when there is none)."""
    try:
        if jwt.get_unverified_header(token).get("alg") != "RS256":
            raise refuse(UNDECODABLE)
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise refuse(UNDECODABLE) from None
    field, value = issuer(claims)
    app = find_app(field, value)
    if app is None:
        # GitHub cannot name the key: an unknown id reads as an undecodable token; a string
        # that is no App's client id, as an issuer that is not an integer
        raise refuse(UNDECODABLE if field == "id" else BAD_ISSUER)
    try:
        jwt.decode(token, app["public_key"], algorithms=["RS256"], options=_SIGNATURE_ONLY)
    except jwt.PyJWTError:
        raise refuse(UNDECODABLE) from None
    exp, iat = claims.get("exp"), claims.get("iat")
    if isinstance(exp, bool) or not isinstance(exp, (int, float)) or exp <= now_s:
        raise refuse(EXPIRED)
    if exp > now_s + MAX_LIFETIME_S:
        raise refuse(TOO_LONG)
    if isinstance(iat, bool) or not isinstance(iat, int) or iat > now_s + DRIFT_S:
        raise refuse(BAD_IAT)
    return app
