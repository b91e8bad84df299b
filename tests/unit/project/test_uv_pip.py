"""tools/uv_pip.py: uv gets the package sources pip is configured with (`make setup` installs with uv)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[3]


def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("uv_pip", ROOT / "tools" / "uv_pip.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pips_settings_become_uvs_flags_with_the_environment_winning() -> None:
    uv_pip = tool()
    out = "\n".join([
        "global.find-links='/opt/wheels'",
        "global.extra-index-url='file:///opt/a/simple file:///opt/b/simple'",
        "global.constraint='/etc/xdg/pip/constraints.txt'",
        "global.index-url='https://mirror.example/simple'",
        "install.index-url='https://install.example/simple'",
        ":env:.default-timeout='180'",
        ":env:.cert='/etc/ssl/certs/ca-certificates.crt'",
        ":env:.find-links='/srv/wheels /srv/more'",
        "user.ignored='x'",
    ])
    config = uv_pip.parse(out)
    assert config["index-url"] == "https://install.example/simple" and config["find-links"] == "/srv/wheels /srv/more"
    args, env = uv_pip.uv_arguments(config)
    assert args == ["--index-strategy", "unsafe-best-match", "--index-url", "https://install.example/simple",
                    "--extra-index-url", "file:///opt/a/simple", "--extra-index-url", "file:///opt/b/simple",
                    "--find-links", "/srv/wheels", "--find-links", "/srv/more",
                    "--constraint", "/etc/xdg/pip/constraints.txt"]
    assert env == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "UV_HTTP_TIMEOUT": "180"}


def test_a_value_written_over_several_lines_gives_each_of_its_urls() -> None:
    """pip prints a config value as the repr of a string: several lines come as one with ``\\n``."""
    uv_pip = tool()
    out = "global.extra-index-url='\\nhttps://a.example/simple\\nhttps://b.example/simple'"
    args, _ = uv_pip.uv_arguments(uv_pip.parse(out))
    assert args[2:] == ["--extra-index-url", "https://a.example/simple", "--extra-index-url", "https://b.example/simple"]


def test_pre_releases_binaries_and_a_proxy_are_passed_on() -> None:
    uv_pip = tool()
    out = "\n".join(["global.pre='yes'", "global.only-binary=':all:'", "install.no-binary='llama-cpp-python'",
                     ":env:.no-index='t'", "global.proxy='http://proxy.example:3128'",
                     "global.client-cert='/etc/ssl/client.pem'", "global.x='{[]: 1}'"])
    args, env = uv_pip.uv_arguments(uv_pip.parse(out))
    assert args == ["--index-strategy", "unsafe-best-match", "--no-index", "--prerelease", "allow",
                    "--only-binary", ":all:", "--no-binary", "llama-cpp-python"]
    assert env == {"SSL_CLIENT_CERT": "/etc/ssl/client.pem", "HTTP_PROXY": "http://proxy.example:3128",
                   "HTTPS_PROXY": "http://proxy.example:3128"}


def test_no_settings_is_pips_default_index_only() -> None:
    uv_pip = tool()
    assert uv_pip.uv_arguments(uv_pip.parse("")) == (["--index-strategy", "unsafe-best-match"], {})


@given(st.text(max_size=300))
def test_any_output_parses_to_settings_without_a_traceback(out: str) -> None:
    uv_pip = tool()
    args, env = uv_pip.uv_arguments(uv_pip.parse(out))
    assert set(env) <= {"SSL_CERT_FILE", "SSL_CLIENT_CERT", "HTTP_PROXY", "HTTPS_PROXY", "UV_HTTP_TIMEOUT"}
    assert args[:2] == ["--index-strategy", "unsafe-best-match"] and all(isinstance(a, str) for a in args)
