"""Tests for gpu_troubleshooter.redact.

Every fake secret is assembled at run time (prefix + generated body) so that
this file itself contains no string a secret scanner would flag.
"""
from __future__ import annotations

import base64
import dataclasses
import io
import json
import random
import string
import time

import pytest

from gpu_troubleshooter.redact import (
    KINDS,
    PRIVATE_KEY_MAX_LINES,
    RULES,
    RedactionResult,
    StreamRedactor,
    redact_lines,
    redact_stream,
    redact_text,
)

ALNUM = string.ascii_letters + string.digits
UPPER_NUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def fake(n: int, alphabet: str = ALNUM, seed: object = 0) -> str:
    """Deterministic random-looking string; different seeds give different strings."""
    rng = random.Random(f"{seed}-{n}-{alphabet}")
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def fake_jwt(seed: object = 0) -> str:
    head = b64url({"alg": "HS256", "typ": "JWT"})
    body = b64url({"sub": f"user{seed}", "exp": 1893456000, "sun": "alice"})
    return f"{head}.{body}.{fake(43, URLSAFE, seed)}"


def pem_block(seed: object = 0, kind: str = "RSA PRIVATE KEY", lines: int = 6) -> list:
    body = [fake(64, B64, f"{seed}-{i}") for i in range(lines)] + [fake(20, B64, seed) + "=="]
    return [f"-----BEGIN {kind}-----"] + body + [f"-----END {kind}-----"]


# ---------------------------------------------------------------------------
# One (or more) case per kind: (kind, input, expected output)
# ---------------------------------------------------------------------------

GHP = "ghp_" + fake(36, seed="ghp")
FINE = "github_pat_" + fake(22, seed="fg1") + "_" + fake(59, seed="fg2")
GLPAT = "glpat-" + fake(20, URLSAFE, seed="gl")
HF = "hf_" + fake(34, string.ascii_letters, seed="hf")
AKIA = "AKIA" + fake(16, UPPER_NUM, seed="akia")
ASIA = "ASIA" + fake(16, UPPER_NUM, seed="asia")
AWS_SECRET = fake(40, B64, seed="awss")
OPENAI_PROJ = "sk-proj-" + fake(74, URLSAFE, seed="oa1") + "T3BlbkFJ" + fake(74, URLSAFE, seed="oa2")
OPENAI_LEGACY = "sk-" + fake(20, seed="oa3") + "T3BlbkFJ" + fake(20, seed="oa4")
ANTHROPIC = "sk-ant-api03-" + fake(93, URLSAFE, seed="ant") + "AA"
SLACK_BOT = "xoxb-" + fake(12, string.digits, "sb1") + "-" + fake(13, string.digits, "sb2") + "-" + fake(24, seed="sb3")
SLACK_USER = ("xoxp-" + "-".join(fake(11, string.digits, f"su{i}") for i in range(3)) + "-" + fake(32, HEX, "su"))
SLACK_HOOK_PATH = "T" + fake(8, UPPER_NUM, "h1") + "/B" + fake(10, UPPER_NUM, "h2") + "/" + fake(24, seed="h3")
GOOGLE = "AIza" + fake(35, URLSAFE, seed="goog")
STRIPE = "sk_live_" + fake(24, seed="stripe")
STRIPE_RK = "rk_live_" + fake(24, seed="stripe-rk")
WANDB = fake(40, HEX, seed="wandb")
NPM = "npm_" + fake(36, seed="npm")
PYPI = "pypi-AgEIcHlwaS5vcmc" + fake(120, URLSAFE, seed="pypi")
AZURE_KEY = fake(86, B64, seed="azure") + "=="
SAS_SIG = fake(40, ALNUM, seed="sas") + "%2B" + fake(8, seed="sas2") + "%3D"
JWT = fake_jwt("generic")
SLURM_JWT = fake_jwt("slurm")
BEARER = fake(40, URLSAFE + ".", seed="bearer")
BASIC = base64.b64encode(b"alice:" + fake(12, seed="basic").encode()).decode()
GH_HEX_TOKEN = fake(40, HEX, seed="ghhex")

KIND_CASES = [
    ("github-token", f"GITHUB_TOKEN={GHP}", "GITHUB_TOKEN=[REDACTED:github-token]"),
    *[("github-token", f"using {p}_{fake(36, seed=p)} for clone", "using [REDACTED:github-token] for clone")
      for p in ("gho", "ghu", "ghs", "ghr")],
    ("github-fine-grained-pat", f"token: {FINE}", "token: [REDACTED:github-fine-grained-pat]"),
    ("gitlab-token", f"git clone https://gitlab.example.org/x.git --token={GLPAT}",
     "git clone https://gitlab.example.org/x.git --token=[REDACTED:gitlab-token]"),
    ("huggingface-token", f"+ huggingface-cli login --token {HF}",
     "+ huggingface-cli login --token [REDACTED:huggingface-token]"),
    ("huggingface-token", f"export HF_TOKEN='{HF}'", "export HF_TOKEN='[REDACTED:huggingface-token]'"),
    ("aws-access-key-id", f"aws_access_key_id = {AKIA}", "aws_access_key_id = [REDACTED:aws-access-key-id]"),
    ("aws-access-key-id", f"Credentials: {ASIA} expires soon", "Credentials: [REDACTED:aws-access-key-id] expires soon"),
    ("aws-secret-access-key", f"aws_secret_access_key = {AWS_SECRET}",
     "aws_secret_access_key = [REDACTED:aws-secret-access-key]"),
    ("aws-secret-access-key", f'export AWS_SECRET_ACCESS_KEY="{AWS_SECRET}"',
     'export AWS_SECRET_ACCESS_KEY="[REDACTED:aws-secret-access-key]"'),
    ("slurm-jwt", f"export SLURM_JWT={SLURM_JWT}", "export SLURM_JWT=[REDACTED:slurm-jwt]"),
    ("slurm-jwt", f"X-SLURM-USER-TOKEN: {SLURM_JWT}", "X-SLURM-USER-TOKEN: [REDACTED:slurm-jwt]"),
    ("jwt", f"mlflow: got id_token {JWT} from issuer", "mlflow: got id_token [REDACTED:jwt] from issuer"),
    ("openai-api-key", f"OPENAI key {OPENAI_PROJ} loaded", "OPENAI key [REDACTED:openai-api-key] loaded"),
    ("openai-api-key", f"client = OpenAI(api_key={OPENAI_LEGACY})",
     "client = OpenAI(api_key=[REDACTED:openai-api-key])"),
    ("anthropic-api-key", f"ANTHROPIC_API_KEY={ANTHROPIC}", "ANTHROPIC_API_KEY=[REDACTED:anthropic-api-key]"),
    ("slack-token", f"slack bot {SLACK_BOT} posting", "slack bot [REDACTED:slack-token] posting"),
    ("slack-token", f"user token {SLACK_USER}", "user token [REDACTED:slack-token]"),
    ("slack-webhook", f"POST https://hooks.slack.com/services/{SLACK_HOOK_PATH} 200",
     "POST https://hooks.slack.com/services/[REDACTED:slack-webhook] 200"),
    ("google-api-key", f"https://maps.googleapis.com/x?key={GOOGLE}",
     "https://maps.googleapis.com/x?key=[REDACTED:google-api-key]"),
    ("stripe-key", f"stripe.api_key set to {STRIPE}", "stripe.api_key set to [REDACTED:stripe-key]"),
    ("stripe-key", f"restricted {STRIPE_RK}", "restricted [REDACTED:stripe-key]"),
    ("wandb-api-key", f"WANDB_API_KEY={WANDB}", "WANDB_API_KEY=[REDACTED:wandb-api-key]"),
    ("wandb-api-key", f"+ wandb login {WANDB}", "+ wandb login [REDACTED:wandb-api-key]"),
    ("wandb-api-key", f"$ wandb login --relogin {WANDB}", "$ wandb login --relogin [REDACTED:wandb-api-key]"),
    ("npm-token", f"//registry.npmjs.org/ uses {NPM}", "//registry.npmjs.org/ uses [REDACTED:npm-token]"),
    ("pypi-token", f"twine upload -u __token__ -p {PYPI}", "twine upload -u __token__ -p [REDACTED:pypi-token]"),
    ("azure-storage-key",
     f"DefaultEndpointsProtocol=https;AccountName=ckpts;AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
     "DefaultEndpointsProtocol=https;AccountName=ckpts;AccountKey=[REDACTED:azure-storage-key];"
     "EndpointSuffix=core.windows.net"),
    ("azure-sas-signature", f"GET https://ckpts.blob.core.windows.net/c/m.pt?sv=2022-11-02&sr=b&sig={SAS_SIG} 403",
     "GET https://ckpts.blob.core.windows.net/c/m.pt?sv=2022-11-02&sr=b&sig=[REDACTED:azure-sas-signature] 403"),
    ("password", "password=hunter2", "password=[REDACTED:password]"),
    ("password", "mysql --user=app --passwd=Sup3r$ecret", "mysql --user=app --passwd=[REDACTED:password]"),
    ("password", "conn pwd=Tr0ub4dor&3", "conn pwd=[REDACTED:password]&3"),
    ("password", '{"user": "app", "password": "correct horse battery staple"}',
     '{"user": "app", "password": "[REDACTED:password]"}'),
    ("password", "{'password': 'pa55', 'host': 'db'}", "{'password': '[REDACTED:password]', 'host': 'db'}"),
    ("password", "export DB_PASSWORD='s3cr3t!'", "export DB_PASSWORD='[REDACTED:password]'"),
    ("password", "  password: MyYamlPass1", "  password: [REDACTED:password]"),
    ("password", "docker login --password Pa55w0rd registry.io", "docker login --password [REDACTED:password] registry.io"),
    ("password", "+ docker login -u alice -p Pa55w0rd! nvcr.io", "+ docker login -u alice -p [REDACTED:password] nvcr.io"),
    ("password", "mysql -u root -pHunter2x mydb", "mysql -u root -p[REDACTED:password] mydb"),
    ("docker-auth", '{"auths": {"nvcr.io": {"auth": "JG9hdXRodG9rZW46bnZhcGktc2VjcmV0"}}}',
     '{"auths": {"nvcr.io": {"auth": "[REDACTED:docker-auth]"}}}'),
    ("kaggle-key", '{"username":"alice","key":"0123456789abcdef0123456789abcdef"}',
     '{"username":"alice","key":"[REDACTED:kaggle-key]"}'),
    ("munge-key", "MUNGE_KEY=QmFzZTY0S2V5TWF0ZXJpYWwxMjM0NTY3OA==", "MUNGE_KEY=[REDACTED:munge-key]"),
    ("password", "PGPASSWORD := tiger", "PGPASSWORD := [REDACTED:password]"),
    ("password", "curl -sS -u alice:S3cr3t-pw https://registry.example.org/v2/",
     "curl -sS -u alice:[REDACTED:password] https://registry.example.org/v2/"),
    ("secret", "secret=9f8e7d6c5b4a", "secret=[REDACTED:secret]"),
    ("secret", f"client_secret={fake(32, seed='cs')}", "client_secret=[REDACTED:secret]"),
    ("secret", f'"client_secret": "{fake(24, seed="cs2")}"', '"client_secret": "[REDACTED:secret]"'),
    ("token", f"token={fake(24, seed='tok')}", "token=[REDACTED:token]"),
    ("token", f"GET /api/v1/runs?access_token={fake(30, seed='at')}&page=2",
     "GET /api/v1/runs?access_token=[REDACTED:token]&page=2"),
    ("token", f"export MLFLOW_TRACKING_TOKEN={fake(30, seed='ml')}", "export MLFLOW_TRACKING_TOKEN=[REDACTED:token]"),
    ("token", f"X-Auth-Token: {fake(30, seed='xat')}", "X-Auth-Token: [REDACTED:token]"),
    ("api-key", f"api_key={fake(32, seed='ak')}", "api_key=[REDACTED:api-key]"),
    ("api-key", f"apikey: '{fake(32, seed='ak2')}'", "apikey: '[REDACTED:api-key]'"),
    ("api-key", f"access_key={fake(20, UPPER_NUM, seed='ak3')}", "access_key=[REDACTED:api-key]"),
    ("api-key", f"x-api-key: {fake(32, seed='ak4')}", "x-api-key: [REDACTED:api-key]"),
    ("bearer", f"Authorization: Bearer {BEARER}", "Authorization: Bearer [REDACTED:bearer]"),
    ("bearer", f"curl -H 'Authorization: Bearer {JWT}' https://api.example.com",
     "curl -H 'Authorization: Bearer [REDACTED:bearer]' https://api.example.com"),
    ("bearer", f"retrying with bearer {BEARER}", "retrying with bearer [REDACTED:bearer]"),
    ("basic-auth", f"Authorization: Basic {BASIC}", "Authorization: Basic [REDACTED:basic-auth]"),
    ("authorization", f"Authorization: token {GH_HEX_TOKEN}", "Authorization: token [REDACTED:authorization]"),
    ("url-credentials", "postgresql://trainer:Pg-pass-42@db.internal:5432/runs",
     "postgresql://trainer:[REDACTED:url-credentials]@db.internal:5432/runs"),
    ("url-credentials", "pip install git+https://oauth2:x9Y8z7W6@gitlab.example.org/ml/lib.git",
     "pip install git+https://oauth2:[REDACTED:url-credentials]@gitlab.example.org/ml/lib.git"),
    ("url-credentials", f"https://{fake(24, HEX, 'tu')}@github.com/org/private.git",
     "https://[REDACTED:url-credentials]@github.com/org/private.git"),
    ("url-credentials", "redis://:r3dis@cache:6379/0", "redis://:[REDACTED:url-credentials]@cache:6379/0"),
    ("email", "Mail sent to alice.smith+jobs@cs.example.edu (job 123)",
     "Mail sent to [REDACTED:email] (job 123)"),
    ("private-key", "\n".join(pem_block("pk")) + "\nnext line\n",
     "[REDACTED:private-key]\n" + "\n" * (len(pem_block("pk")) - 1) + "next line\n"),
    ("private-key", json.dumps({"type": "service_account",
                                "private_key": "\n".join(pem_block("gcp", "PRIVATE KEY")) + "\n",
                                "client_email": "sa@proj.iam.gserviceaccount.com"}),
     '{"type": "service_account", "private_key": "[REDACTED:private-key]\\n", '
     '"client_email": "[REDACTED:email]"}'),
]


@pytest.mark.parametrize("kind,text,expected", KIND_CASES,
                         ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(KIND_CASES)])
def test_kind_is_redacted(kind, text, expected):
    result = redact_text(text)
    assert result.text == expected
    assert result.counts.get(kind, 0) >= 1, dict(result.counts)


def test_every_kind_has_a_case_and_there_are_at_least_20():
    assert len(KINDS) >= 20
    assert set(KINDS) == {k for k, _, _ in KIND_CASES}


@pytest.mark.parametrize("kind,text,expected", KIND_CASES,
                         ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(KIND_CASES)])
def test_redaction_is_idempotent(kind, text, expected):
    once = redact_text(text)
    twice = redact_text(once.text)
    assert twice.text == once.text
    assert dict(twice.counts) == {}


def test_result_is_frozen_and_counts_read_only():
    r = redact_text("password=x1y2z3")
    assert isinstance(r, RedactionResult)
    assert r.counts == {"password": 1} and r.total == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.text = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        r.counts["password"] = 5  # type: ignore[index]


def test_counts_several_of_one_kind():
    r = redact_text(f"a {GHP} b {GHP}\npassword=1 passwd=2\n")
    assert r.counts == {"github-token": 2, "password": 2}


# ---------------------------------------------------------------------------
# False positives: diagnosis text must survive
# ---------------------------------------------------------------------------

MUST_SURVIVE = [
    "psql: error: FATAL:  password incorrect",
    'FATAL:  Password authentication failed for user "postgres"',
    "Token indices sequence length is longer than the specified maximum sequence length for this model (1024 > 512).",
    "token indices sequence length is longer than the specified maximum sequence length",
    "generate(max_tokens=512, temperature=0.7)",
    "max_new_tokens: 256",
    "Loading tokenizer from /scratch/alice/models/llama/tokenizer.model",
    "self.secret_sauce_layer = nn.Linear(4096, 4096)",
    "secret_sauce_layer.weight: torch.Size([4096, 4096])",
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-8f3c2a1e-5b6d-4c7e-9f80-123456789abc)",
    "  MIG 3g.40gb Device 0: (UUID: MIG-1a2b3c4d-5e6f-7a8b-9c0d-ef0123456789)",
    "  Resolved https://github.com/huggingface/transformers.git to commit 0a1b2c3d4e5f60718293a4b5c6d7e8f901234567",
    "Successfully installed transformers-4.40.0.dev0 flash-attn-2.5.6+git7c1a2b3",
    "  Running command git checkout -q 9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.15 GiB of which 1.20 GiB is free.",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect. For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    '  File "/home/alice/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1511, in _call_impl',
    "    tokenizer = AutoTokenizer.from_pretrained(args.model, token=args.hf_token)",
    "    tokenizer.pad_token = tokenizer.eos_token",
    'Using pad_token, but it is not set yet. {"pad_token": "<pad>", "eos_token": "</s>", "bos_token": "<s>"}',
    "Setting `pad_token_id` to `eos_token_id`:2 for open-end generation.",
    "TOKENIZERS_PARALLELISM=false",
    "PWD=/home/alice/projects/llm",
    "OLDPWD=/home/alice",
    "Access denied for user 'root'@'localhost' (using password: YES)",
    "ERROR: failed to refresh token: HTTPError",
    "huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo. Please log in.",
    "Token is valid (permission: read).",
    "Your token has been saved to /home/alice/.cache/huggingface/token",
    "wandb: Currently logged in as: alice (ml-team). Use `wandb login --relogin` to force relogin",
    "wandb: 🚀 View run at https://wandb.ai/ml-team/llm/runs/3k9x2m1q",
    "git@github.com:ml-team/llm-train.git",
    "ssh: connect to host login01.cluster.example.edu port 22: Connection refused",
    "NCCL INFO Bootstrap : Using ib0:10.3.0.17<0>",
    "NCCL INFO comm 0x55d3c8a0 rank 3 nranks 8 cudaDev 3 busId 4c000 commId 0x8f1e2d3c4b5a6978 - Init COMPLETE",
    "Epoch 1:  45%|████▌     | 450/1000 [02:13<02:43,  3.37it/s, loss=2.31, v_num=0]",
    "srun: error: gpu023: task 3: Out Of Memory",
    "slurmstepd: error: Detected 1 oom_kill event in StepId=123456.0. Some of the step tasks have been OOM Killed.",
    "Bearer token is invalid or expired",
    "Authorization: required",
    "pip install torch==2.2.1+cu121 --index-url https://download.pytorch.org/whl/cu121",
    "docker pull nvcr.io/nvidia/pytorch@sha256:5f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8",
    "Permission denied (publickey,password).",
    "key: model.layers.0.self_attn.q_proj.weight shape: [4096, 4096]",
    "api_key=None",
    "token=${HF_TOKEN}",
    "password: ********",
    "--password-stdin",
    "-----BEGIN CERTIFICATE-----",
    "MIIDdzCCAl+gAwIBAgIEbm3i8zANBgkqhkiG9w0BAQsFADBsMRAwDgYDVQQGEwdV",
    "/usr/local/cuda-12.1/lib64/libcudart.so.12: cannot open shared object file",
    "@torch.compile(mode='max-autotune')",
    "export CUDA_VISIBLE_DEVICES=0,1,2,3",
    "hf_hub_download(repo_id='meta-llama/Llama-2-7b-hf', filename='config.json')",
    "sk-learn is not a package; did you mean scikit-learn?",
    "task-proj-alpha finished",
    "docker run --rm -u 1000:1000 nvcr.io/nvidia/pytorch:24.02-py3",
    "python -u train.py --config configs/llama.yaml",
]


@pytest.mark.parametrize("line", MUST_SURVIVE)
def test_diagnostic_text_survives(line):
    result = redact_text(line)
    assert result.text == line, dict(result.counts)
    assert dict(result.counts) == {}


def build_clean_job_log(ranks: int = 4, steps: int = 60) -> str:
    """A realistic multi-rank training log with failures and no secrets."""
    out = [
        "+ module load cuda/12.1 nccl/2.18",
        "+ source /scratch/alice/.venv/bin/activate",
        "SLURM_JOB_ID=4815162",
        "SLURM_JOB_NAME=llama-ft",
        "SLURM_JOB_NODELIST=gpu[021-022]",
        "SLURM_SUBMIT_DIR=/home/alice/projects/llm",
        "PWD=/home/alice/projects/llm",
        "TOKENIZERS_PARALLELISM=false",
        "NCCL_DEBUG=INFO",
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "Collecting flash-attn==2.5.6",
        "  Cloning https://github.com/Dao-AILab/flash-attention.git to /tmp/pip-req-build-x1y2",
        "  Resolved https://github.com/Dao-AILab/flash-attention.git to commit 85881f547fd1053a7b4a2c3f1e1d6e8b0a9c7d21",
        "Successfully installed flash-attn-2.5.6 transformers-4.40.0 tokenizers-0.19.1",
        "Mon Mar 11 09:14:02 2024",
        "+-----------------------------------------------------------------------------------------+",
        "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |",
        "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:1B:00.0 Off |                    0 |",
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-8f3c2a1e-5b6d-4c7e-9f80-123456789abc)",
        "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e5f)",
    ]
    for r in range(ranks):
        out += [
            f"[rank{r}]: gpu021:{1234 + r}:{1234 + r} [{r}] NCCL INFO Bootstrap : Using ib0:10.3.0.{17 + r}<0>",
            f"[rank{r}]: gpu021:{1234 + r}:{1300 + r} [{r}] NCCL INFO comm 0x55d3c8a{r} rank {r} nranks {ranks} "
            f"cudaDev {r} busId {r}b000 commId 0x8f1e2d3c4b5a6978 - Init COMPLETE",
            f"[rank{r}]: Loading tokenizer from /scratch/alice/models/llama-2-7b/tokenizer.model",
            f"[rank{r}]: Token indices sequence length is longer than the specified maximum sequence length "
            f"for this model (4711 > 4096). Running this sequence through the model will result in indexing errors",
            f"[rank{r}]: Setting `pad_token_id` to `eos_token_id`:2 for open-end generation.",
            f"[rank{r}]: generation config: max_new_tokens=512, do_sample=True, top_p=0.9",
        ]
    for step in range(steps):
        r = step % ranks
        out.append(f"[rank{r}]: {{'loss': {2.5 - step / 100:.4f}, 'grad_norm': 1.{step:02d}, "
                   f"'learning_rate': 2e-05, 'epoch': {step / steps:.2f}}}")
        if step % 10 == 0:
            out.append(f" {step * 100 // steps:3d}%|██▌       | {step}/{steps} [00:{step:02d}<01:00,  1.02it/s]")
    out += [
        "[rank2]: Traceback (most recent call last):",
        '[rank2]:   File "/home/alice/projects/llm/train.py", line 212, in <module>',
        "[rank2]:     tokenizer = AutoTokenizer.from_pretrained(args.model, token=args.hf_token)",
        '[rank2]:   File "/scratch/alice/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", '
        "line 1511, in _wrapped_call_impl",
        "[rank2]:     return self._call_impl(*args, **kwargs)",
        "[rank2]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total "
        "capacity of 79.15 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.94 GiB "
        "memory in use. Of the allocated memory 75.10 GiB is allocated by PyTorch, and 1.23 GiB is reserved by "
        "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
        "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
        "[rank3]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.",
        "[rank3]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
        "[rank3]: Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "[rank0]:[E311 09:31:44.021 ProcessGroupNCCL.cpp:1182] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=4411, OpType=ALLREDUCE, NumelIn=131072, Timeout(ms)=600000) ran for 600021 ms",
        "wandb: Currently logged in as: alice (ml-team). Use `wandb login --relogin` to force relogin",
        "wandb: 🚀 View run smooth-sun-42 at: https://wandb.ai/ml-team/llm/runs/3k9x2m1q",
        "FATAL:  password authentication failed for user \"trainer\"",
        "psql: error: connection to server at \"db.internal\" (10.3.0.5), port 5432 failed: password incorrect",
        "self.secret_sauce_layer = nn.Linear(4096, 4096)",
        "srun: error: gpu022: task 2: Out Of Memory",
        "slurmstepd: error: Detected 1 oom_kill event in StepId=4815162.0. Some of the step tasks have been "
        "OOM Killed.",
        "srun: error: gpu022: task 3: Exited with exit code 1",
        "Elapsed: 00:17:42   ExitCode: 1:0",
    ]
    return "\n".join(out) + "\n"


def test_realistic_clean_log_is_unchanged():
    log = build_clean_job_log()
    assert len(log) > 10_000
    result = redact_text(log)
    assert result.text == log
    assert dict(result.counts) == {}


# ---------------------------------------------------------------------------
# Streaming and private key blocks
# ---------------------------------------------------------------------------

def test_stream_private_key_across_lines_preserves_line_count():
    block = pem_block("stream", "OPENSSH PRIVATE KEY", lines=20)
    lines = ["before\n", "key follows: " + block[0] + "\n"] + [b + "\n" for b in block[1:-1]] \
        + [block[-1] + " after-end\n", "after\n"]
    counts = {}
    out = list(redact_lines(iter(lines), counts))
    assert len(out) == len(lines)
    assert out[0] == "before\n"
    assert out[1] == "key follows: [REDACTED:private-key]\n"
    assert all(o == "\n" for o in out[2:-2])
    assert out[-2] == " after-end\n"
    assert out[-1] == "after\n"
    assert counts == {"private-key": 1}
    joined = "".join(out)
    assert not any(b in joined for b in block[1:-1])


def test_pgp_block_with_headers_and_srun_labels():
    lines = ["0: -----BEGIN PGP PRIVATE KEY BLOCK-----", "0: Version: GnuPG v2", "0: ",
             "0: " + fake(64, B64, "pgp1"), "0: " + fake(64, B64, "pgp2"), "0: =" + fake(4, B64, "crc"),
             "0: -----END PGP PRIVATE KEY BLOCK-----", "0: done"]
    r = redact_text("\n".join(lines))
    assert r.text.split("\n") == ["0: [REDACTED:private-key]", "", "", "", "", "", "", "0: done"]


def test_unterminated_block_ends_at_first_non_pem_line():
    lines = ["-----BEGIN RSA PRIVATE KEY-----", fake(64, B64, "u1"), fake(64, B64, "u2"),
             "[rank0]: Traceback (most recent call last):", "password incorrect"]
    out = redact_text("\n".join(lines)).text.split("\n")
    assert out == ["[REDACTED:private-key]", "", "", "[rank0]: Traceback (most recent call last):",
                   "password incorrect"]


def test_unterminated_block_is_capped():
    body = [fake(64, B64, f"cap{i}") + "\n" for i in range(PRIVATE_KEY_MAX_LINES + 50)]
    lines = ["-----BEGIN PRIVATE KEY-----\n"] + body
    out = list(redact_lines(lines))
    assert len(out) == len(lines)
    assert out[0] == "[REDACTED:private-key]\n"
    assert out[1:PRIVATE_KEY_MAX_LINES + 1] == ["\n"] * PRIVATE_KEY_MAX_LINES
    # past the cap, lines are processed normally again
    assert out[PRIVATE_KEY_MAX_LINES + 1:] == body[PRIVATE_KEY_MAX_LINES:]
    # a custom cap is honoured
    r = StreamRedactor(max_key_lines=3)
    small = [r.redact_line(x) for x in lines[:8]]
    assert small[:4] == ["[REDACTED:private-key]\n", "\n", "\n", "\n"] and small[4:] == lines[4:8]


def test_line_endings_are_preserved():
    text = "a\r\npassword=p4ss\r\nb\n" + GHP
    r = redact_text(text)
    assert r.text == "a\r\npassword=[REDACTED:password]\r\nb\n[REDACTED:github-token]"


def test_redact_stream_returns_counts():
    src = io.StringIO(f"x {HF}\npassword=abc123\nclean\n")
    dst = io.StringIO()
    counts = redact_stream(src, dst)
    assert dst.getvalue() == "x [REDACTED:huggingface-token]\npassword=[REDACTED:password]\nclean\n"
    assert dict(counts) == {"huggingface-token": 1, "password": 1}


def test_text_and_stream_forms_agree():
    log = build_clean_job_log(ranks=2, steps=10) + "\n".join(t for _, t, _ in KIND_CASES) + "\n"
    counts = {}
    streamed = "".join(redact_lines(io.StringIO(log), counts))
    whole = redact_text(log)
    assert streamed == whole.text
    assert counts == dict(whole.counts)


# ---------------------------------------------------------------------------
# Canary: 25 unique secrets planted in a multi-rank log, streaming form
# ---------------------------------------------------------------------------

def canaries():
    """25 (line template, secret) pairs, every secret unique."""
    c = [
        ("export HF_TOKEN={}", "hf_" + fake(34, string.ascii_letters, "c1")),
        ("git remote set-url origin https://{}@github.com/ml-team/llm.git", "ghp_" + fake(36, seed="c2")),
        ("GH_TOKEN={}", "github_pat_" + fake(22, seed="c3a") + "_" + fake(59, seed="c3b")),
        ("CI token {} expires 2024-04-01", "glpat-" + fake(20, URLSAFE, "c4")),
        ("Found credentials in environment variables: {}", "AKIA" + fake(16, UPPER_NUM, "c5")),
        ("aws_secret_access_key={}", fake(40, B64, "c6")),
        ("SLURM_JWT={}", fake_jwt("c7")),
        ("id_token={}", fake_jwt("c8")),
        ("openai.api_key = '{}'", "sk-proj-" + fake(74, URLSAFE, "c9a") + "T3BlbkFJ" + fake(74, URLSAFE, "c9b")),
        ("ANTHROPIC_API_KEY={}", "sk-ant-api03-" + fake(93, URLSAFE, "c10") + "AA"),
        ("notifier: {}", "xoxb-" + fake(12, string.digits, "c11a") + "-" + fake(13, string.digits, "c11b")
         + "-" + fake(24, seed="c11c")),
        ("webhook https://hooks.slack.com/services/{}", "T" + fake(8, UPPER_NUM, "c12a") + "/B"
         + fake(10, UPPER_NUM, "c12b") + "/" + fake(24, seed="c12c")),
        ("GOOGLE_API_KEY={}", "AIza" + fake(35, URLSAFE, "c13")),
        ("billing: {}", "sk_live_" + fake(24, seed="c14")),
        ("WANDB_API_KEY={}", fake(40, HEX, "c15")),
        ("+ npm config set //registry.npmjs.org/:_authToken {}", "npm_" + fake(36, seed="c16")),
        ("TWINE_PASSWORD={}", "pypi-AgEIcHlwaS5vcmc" + fake(80, URLSAFE, "c17")),
        ("AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=x;AccountKey={};"
         "EndpointSuffix=core.windows.net", fake(86, B64, "c18") + "=="),
        ("db_password = \"{}\"", "Xk9-" + fake(16, seed="c19")),
        ("client_secret: '{}'", fake(32, seed="c20")),
        ("Authorization: Bearer {}", fake(48, URLSAFE, "c21")),
        ("Authorization: Basic {}", base64.b64encode(b"svc:" + fake(16, seed="c22").encode()).decode()),
        ("MLFLOW_TRACKING_URI=https://mlflow:{}@mlflow.internal:5000", "Mf" + fake(18, seed="c23")),
        ("job owner {}", "bob." + fake(6, string.ascii_lowercase, "c24") + "@example.org"),
        ("api_key={}", fake(32, seed="c25")),
    ]
    assert len(c) == 25 and len({s for _, s in c}) == 25
    return c


def test_canaries_do_not_survive_streaming():
    clean = build_clean_job_log(ranks=8, steps=200).splitlines(keepends=True)
    pem = pem_block("canary", lines=10)
    planted = {}
    lines = list(clean)
    step = len(clean) // 27
    for i, (template, secret) in enumerate(canaries()):
        pos = (i + 1) * step + i
        lines.insert(pos, f"[rank{i % 8}]: " + template.format(secret) + "\n")
    key_at = len(lines) // 2
    for j, pem_line in enumerate(pem):
        lines.insert(key_at + j, pem_line + "\n")
    secret_lines = {i for i, line in enumerate(lines) if line not in clean}
    assert len(secret_lines) == 25 + len(pem)

    counts = {}
    out = list(redact_lines(io.StringIO("".join(lines)), counts))
    assert len(out) == len(lines)
    joined = "".join(out)
    for _, secret in canaries():
        assert secret not in joined
    for body in pem[1:-1]:
        assert body not in joined
    for i, (src, dst) in enumerate(zip(lines, out)):
        if i in secret_lines:
            if src.startswith("[rank"):
                assert "[REDACTED:" in dst, src
        else:
            assert dst == src, f"line {i} changed"
    assert sum(counts.values()) == 26      # 25 canaries + one key block


# ---------------------------------------------------------------------------
# Backtracking guard
# ---------------------------------------------------------------------------

FILLERS = ["a", "0", "-", "_", ".", "/", "=", ":", "@", " "]
N = 100_000


def adversarial_lines(probe, fillers=FILLERS):
    for ch in fillers:
        yield (probe + ch * N)[:N]                          # one long run after the trigger
    yield (probe * (N // len(probe) + 1))[:N]               # the trigger repeated
    for ch in ("a", "0"):
        unit = probe + ch * 7
        yield (unit * (N // len(unit) + 1))[:N]             # many short partial matches


def loop_chars(rule):
    """The fillers a rule's repetitions can consume (alphanumerics always)."""
    src = rule.regex.pattern
    return [c for c in FILLERS
            if c.isalnum() or c in src or "[^" in src or (c == " " and "\\s" in src)]


def pem_adversarial_lines():
    yield ("-----BEGIN " + "A" * N)[:N]
    yield ("-----BEGIN RSA " * N)[:N]
    yield ("-----BEGIN PRIVATE KEY-----" + "A" * N)[:N]
    yield ("-----BEGIN PRIVATE KEY-----" + "-----END " * N)[:N]


def test_patterns_are_linear_time_on_adversarial_input():
    # CPU time of this process, so a busy CI machine does not make it flaky;
    # catastrophic backtracking costs seconds to hours, far above the bound.
    slowest = (0.0, "")
    start = time.process_time()
    for rule in RULES:
        for i, probe in enumerate(rule.all_probes()):
            # every filler after the first trigger; a few after the others (time budget)
            for line in adversarial_lines(probe, loop_chars(rule) if i == 0 else ("a", "0")):
                t0 = time.process_time()
                for _ in rule.regex.finditer(line):
                    pass
                slowest = max(slowest, (time.process_time() - t0, f"{rule.kind} {probe!r}"))
    # the whole pipeline, including the private key block state machine
    for line in pem_adversarial_lines():
        redact_text(line)
        r = StreamRedactor()
        r.redact_line("-----BEGIN OPENSSH PRIVATE KEY-----")
        r.redact_line(line.replace("-----BEGIN", "Comment:", 1))
    for ch in FILLERS:
        redact_text(ch * N)
    elapsed = time.process_time() - start
    assert elapsed < 2.0, f"took {elapsed:.2f}s; slowest single line {slowest}"
    assert slowest[0] < 0.5, slowest


def test_facts_json_is_redacted_by_key():
    """Env-style secrets in the probe's facts go whatever they look like (web review §2.2)."""
    pytest.importorskip("flask")
    from gpu_troubleshooter.web.redaction import redact_json
    secrets = {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYq9Zr8Tg3Lk", "PASSWORD": "Hunter2Secret99",
               "MLFLOW_TRACKING_TOKEN": "mlf_tok_8b7c6d5e4f3a2b1c", "WANDB_API_KEY": "3f9a4f3a", "MUNGE_KEY": "abcdefgh12",
               "db_password": "x1", "client-secret": "plain words here"}
    kept = {"PWD": "/scratch/u", "MAX_TOKENS": 512, "GOOGLE_APPLICATION_CREDENTIALS": "/home/u/key.json",
            "CUDA_VISIBLE_DEVICES": "0,1", "HF_HUB_DISABLE_TOKEN": "1", "monkey": "x", "keyboard": "us"}
    out = redact_json({"facts": {"env": {**secrets, **kept}, "list": [{"token": "abc123xyz"}]}})
    env = out["facts"]["env"]
    assert all(env[k].startswith("[REDACTED:") for k in secrets), env
    assert {k: env[k] for k in kept} == kept
    assert out["facts"]["list"][0]["token"].startswith("[REDACTED:")
