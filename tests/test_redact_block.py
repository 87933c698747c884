"""redact_lines' block fast path gives exactly what line-by-line redaction gives."""
import random

from gpu_troubleshooter.redact import StreamRedactor, redact_lines

SECRETS = [
    "export AWS_SECRET_ACCESS_KEY=abcdEFGHijklMNOPqrstUVWXyz0123456789ABCD\n",
    "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + " pushed\n",
    "-----BEGIN RSA PRIVATE KEY-----\n",
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n",
    "-----END RSA PRIVATE KEY-----\n",
    "mysql -u root -pS3cretPassw0rd db\n",
    "password: hunter2hunter2\r\n",
]


def _slow(lines):
    r = StreamRedactor()
    return [r.redact_line(x) for x in lines]


def test_block_fast_path_equals_line_by_line():
    rnd = random.Random(7)
    for trial in range(30):
        lines = [f"[step {i}] loss={rnd.random():.4f} throughput={rnd.randint(900, 1200)} img/s\n"
                 for i in range(rnd.randint(1, 1500))]
        for _ in range(rnd.randint(0, 6)):  # secrets anywhere, block boundaries included
            at = rnd.randint(0, len(lines))
            lines[at:at] = SECRETS[rnd.randint(0, 2):rnd.randint(3, len(SECRETS))]
        assert list(redact_lines(iter(lines))) == _slow(lines), trial


def test_secret_on_a_block_boundary_and_open_key_across_blocks():
    filler = ["ok line\n"] * 255
    lines = filler + [SECRETS[0]] + filler + SECRETS[2:4] + ["AAAA\n"] * 300 + [SECRETS[4], "after\n"]
    out = list(redact_lines(iter(lines)))
    assert out == _slow(lines)
    assert "abcdEFGH" not in "".join(out) and "AAAA" not in "".join(out) and out[-1] == "after\n"
