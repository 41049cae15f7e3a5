"""An App's RSA key pair: made as GitHub hands one out (a PKCS#1 `BEGIN RSA PRIVATE KEY` PEM),
or read from the PEM a test brings; the emulator keeps only the public half."""
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

KEY_BITS = 2048  # GitHub's App keys


def new_private_key():
    """Return a fresh private key as GitHub's download holds it (PKCS#1 PEM text)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


def public_pem(pem):
    """Return the public key (SubjectPublicKeyInfo PEM) of an RSA private or public key PEM;
    ValueError for anything else."""
    data = pem.encode() if isinstance(pem, str) else pem
    try:
        key = serialization.load_pem_private_key(data, password=None).public_key()
    except (ValueError, TypeError):
        key = serialization.load_pem_public_key(data)  # ValueError when it is neither
    if not isinstance(key, rsa.RSAPublicKey):
        raise ValueError("an App's key is an RSA key")
    return key.public_bytes(serialization.Encoding.PEM,
                            serialization.PublicFormat.SubjectPublicKeyInfo).decode()
