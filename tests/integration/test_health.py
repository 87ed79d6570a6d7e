"""Standard health checking on a real server: ``Check`` of each service, and of a service the
server does not know (NOT_FOUND, naming it, a long name clipped, and the services it knows);
``planner-svc health`` against a serving, a draining, an unreachable and a silent server."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from planner_svc.cli import main
from planner_svc.core.errors import ECHO_CHARS
from planner_svc.server.app import SERVICE_NAMES
from planner_svc.server.health import MAX_LISTED, HealthServicer
from planner_svc.settings import ServerSettings, TransportSettings
from tests.integration.conftest import Live, start
from tests.serving import ServeProcess, refused_address


@pytest.mark.parametrize("service", ["", *SERVICE_NAMES])
def test_check_reports_every_service_serving(live: Live, service: str) -> None:
    reply = health_pb2_grpc.HealthStub(live.channel).Check(
        health_pb2.HealthCheckRequest(service=service), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_check_of_an_unknown_service_is_not_found_and_names_it(live: Live) -> None:
    with pytest.raises(grpc.RpcError) as info:
        health_pb2_grpc.HealthStub(live.channel).Check(
            health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
    known = ", ".join(repr(name) for name in sorted(("", *SERVICE_NAMES)))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]
    assert info.value.details() == (  # type: ignore[attr-defined]
        "service 'no.such.Service' is unknown to health checking; services with a status: "
        f"{known} ('' is the whole server)")


def test_check_of_a_long_unknown_name_quotes_its_start_and_length(live: Live) -> None:
    name = "n" * 9_000  # quoted whole, the details would pass gRPC's 8 KiB of metadata
    with pytest.raises(grpc.RpcError) as info:
        health_pb2_grpc.HealthStub(live.channel).Check(
            health_pb2.HealthCheckRequest(service=name), timeout=10)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]
    details: str = info.value.details()  # type: ignore[attr-defined]
    assert details.startswith(f"service '{'n' * ECHO_CHARS}'… (9000 characters) is unknown "
                              "to health checking; services with a status: ")
    assert len(details) < 1_000


@contextlib.contextmanager
def _serving(servicer: HealthServicer) -> Iterator[health_pb2_grpc.HealthStub]:
    """A stub on a health-only server (4 threads) over ``servicer``, stopped on exit."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield health_pb2_grpc.HealthStub(channel)
    finally:
        server.stop(0)


def test_check_names_the_first_services_with_a_status_and_counts_the_rest() -> None:
    servicer = HealthServicer()
    names = [f"svc.S{i:03}" for i in range(MAX_LISTED + 4)]  # "" and 104 more
    for name in names:
        servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    with _serving(servicer) as stub, pytest.raises(grpc.RpcError) as info:
        stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
    shown = ", ".join(repr(n) for n in ["", *names][:MAX_LISTED])
    assert info.value.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]
    assert info.value.details() == (  # type: ignore[attr-defined]
        "service 'no.such.Service' is unknown to health checking; services with a status: "
        f"{shown} and 5 more ('' is the whole server)")


def test_check_list_and_watch_agree_through_a_graceful_shutdown() -> None:
    serving, not_serving = (health_pb2.HealthCheckResponse.SERVING,
                            health_pb2.HealthCheckResponse.NOT_SERVING)
    servicer = HealthServicer()
    servicer.set("svc.A", serving)
    servicer.set("svc.B", not_serving)
    with _serving(servicer) as stub:

        def statuses() -> dict[str, int]:
            listed = stub.List(health_pb2.HealthListRequest(), timeout=10).statuses
            checked = {name: stub.Check(health_pb2.HealthCheckRequest(service=name),
                                        timeout=10).status for name in listed}
            assert checked == {name: reply.status for name, reply in listed.items()}
            return checked

        assert statuses() == {"": serving, "svc.A": serving, "svc.B": not_serving}
        watch = stub.Watch(health_pb2.HealthCheckRequest(service="svc.A"), timeout=10)
        assert next(watch).status == serving
        servicer.set("svc.B", serving)
        assert statuses() == {"": serving, "svc.A": serving, "svc.B": serving}
        servicer.enter_graceful_shutdown()
        assert next(watch).status == not_serving
        watch.cancel()
        servicer.set("svc.A", serving)  # ignored from now on, as the base class does
        servicer.set("svc.C", serving)
        assert statuses() == dict.fromkeys(("", "svc.A", "svc.B"), not_serving)


def test_check_and_watch_agree_after_racing_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    serving, not_serving = (health_pb2.HealthCheckResponse.SERVING,
                            health_pb2.HealthCheckResponse.NOT_SERVING)
    base_set = health.HealthServicer.set
    inside = threading.Event()

    def slow_set(self: health.HealthServicer, service: str, status: int) -> None:
        if status == serving:  # the first setter is inside the base class when the second
            inside.set()       # starts, and finishes last
            time.sleep(0.05)
        base_set(self, service, status)

    monkeypatch.setattr(health.HealthServicer, "set", slow_set)
    servicer = HealthServicer()
    first = threading.Thread(target=servicer.set, args=("svc.A", serving))
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=servicer.set, args=("svc.A", not_serving))
    second.start()
    first.join(10)
    second.join(10)
    with _serving(servicer) as stub:
        request = health_pb2.HealthCheckRequest(service="svc.A")
        checked = stub.Check(request, timeout=10).status
        watch = stub.Watch(request, timeout=10)
        watched = next(watch).status
        watch.cancel()
    assert checked == watched == not_serving  # the later set wins in both tables


def _probe(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``planner-svc health`` run in this process: exit code, stdout, stderr."""
    code = main(["health", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("service", ["", *SERVICE_NAMES])
def test_the_health_command_prints_serving_and_exits_0(
    live: Live, service: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _probe(["--address", live.address, "--service", service], capsys) == (
        0, "SERVING\n", "")


def test_the_health_command_exits_1_on_not_serving(
    fixture_data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = start(ServerSettings(data_dir=fixture_data_dir,
                                  transport=TransportSettings(port=0, max_workers=2)))
    try:
        server.running.health.enter_graceful_shutdown()  # as on SIGTERM, before draining
        capsys.readouterr()  # the server's startup log
        assert _probe(["--address", server.address], capsys) == (1, "NOT_SERVING\n", "")
    finally:
        server.channel.close()
        server.running.stop(0)


def test_the_health_command_names_an_unknown_service(
    live: Live, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _probe(["--address", live.address, "--service", "no.such.Service"], capsys)
    assert (code, out) == (3, "")
    assert err.startswith(f"planner-svc health: NOT_FOUND: {live.address}: service "
                          "'no.such.Service' is unknown to health checking;")


def test_the_health_command_names_an_unreachable_address(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with refused_address() as target:
        code, out, err = _probe(["--address", target], capsys)
    assert (code, out) == (3, "")
    assert err.startswith(f"planner-svc health: UNAVAILABLE: cannot reach {target}: ")
    assert f"is `planner-svc serve` running at {target}?" in err


@contextlib.contextmanager
def _silent_address() -> Iterator[str]:
    """A loopback address that accepts connections and never speaks HTTP/2."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        yield f"127.0.0.1:{silent.getsockname()[1]}"


def test_the_health_command_gives_up_on_a_silent_server_at_its_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _silent_address() as target:
        started = time.monotonic()
        code, out, err = _probe(["--address", target, "--timeout", "0.5"], capsys)
        waited = time.monotonic() - started
    assert (code, out) == (3, "")
    assert err == (f"planner-svc health: DEADLINE_EXCEEDED: no answer from {target} within "
                   "0.5 s (raise --timeout, or check the server's load)\n")
    assert waited < 10.0  # bounded by --timeout (generous for a loaded machine)


def test_the_plan_command_names_the_address_and_timeout_it_waited_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _silent_address() as target:
        code = main(["plan", "Who painted the Mona Lisa?", "--address", target,
                     "--timeout", "0.5"])
    out, err = capsys.readouterr()
    assert (code, out) == (3, "")
    assert err == (f"planner-svc plan: DEADLINE_EXCEEDED: no answer from {target} within "
                   "0.5 s (raise --timeout, or check the server's load)\n")


def test_the_health_command_probes_a_served_process(
    fixture_data_dir: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    server = ServeProcess(data)
    try:
        target = server.wait_serving(timeout_s=60)
        probe = subprocess.run(
            [sys.executable, "-m", "planner_svc.cli", "health", "--address", target],
            capture_output=True, text=True, timeout=60, check=False,
        )
        assert (probe.returncode, probe.stdout, probe.stderr) == (0, "SERVING\n", "")
    finally:
        assert server.stop() == 0
    probe = subprocess.run(
        [sys.executable, "-m", "planner_svc.cli", "health", "--address", target],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert (probe.returncode, probe.stdout) == (3, "")
    assert probe.stderr.startswith(f"planner-svc health: UNAVAILABLE: cannot reach {target}: ")


@pytest.mark.parametrize("argv", [[], ["--address", "{target}"]])
def test_the_clients_call_the_address_in_the_environment_unless_given_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    with refused_address() as target, refused_address() as other:
        monkeypatch.setenv("PLANNER_SVC_ADDRESS", target if not argv else other)
        code, out, err = _probe([a.format(target=target) for a in argv], capsys)
    assert (code, out) == (3, "")
    assert err.startswith(f"planner-svc health: UNAVAILABLE: cannot reach {target}: ")


def test_an_empty_address_variable_means_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner_svc.client.connection import DEFAULT_ADDRESS, client_address

    monkeypatch.setenv("PLANNER_SVC_ADDRESS", " ")
    assert client_address() == DEFAULT_ADDRESS == "127.0.0.1:50151"
    monkeypatch.setenv("PLANNER_SVC_ADDRESS", "10.0.0.7:9000")
    assert client_address() == "10.0.0.7:9000"


@pytest.mark.parametrize(
    ("variable", "argv", "message"),
    [
        ("notahost", [], "argument --address: $PLANNER_SVC_ADDRESS is 'notahost', which is not "
         "HOST:PORT with a port in 1..65535 (e.g. 127.0.0.1:50151)"),
        ("http://127.0.0.1:50238", [], "argument --address: $PLANNER_SVC_ADDRESS is "
         "'http://127.0.0.1:50238', which is a URL; give HOST:PORT without 'http://' "
         "(e.g. 127.0.0.1:50238)"),
        ("", ["--address", "https://planner.internal:443/v1"], "argument --address: "
         "'https://planner.internal:443/v1' is a URL; give HOST:PORT without 'https://' "
         "(e.g. planner.internal:443; TLS takes --tls-ca)"),
        ("", ["--address", "http://planner.internal"], "argument --address: "
         "'http://planner.internal' is a URL; give HOST:PORT without 'http://' "
         "(e.g. 127.0.0.1:50151)"),
        ("", ["--address", "notahost"], "argument --address: 'notahost' is not HOST:PORT with "
         "a port in 1..65535 (e.g. 127.0.0.1:50151)"),
    ],
)
@pytest.mark.parametrize("command", ["health", "plan"])
def test_a_bad_address_names_where_it_came_from(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, variable: str,
    argv: list[str], message: str, command: str
) -> None:
    monkeypatch.setenv("PLANNER_SVC_ADDRESS", variable)
    with pytest.raises(SystemExit) as info:
        main([command, *(["a question"] if command == "plan" else []), *argv])
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"planner-svc {command}: error: {message}"


@pytest.mark.parametrize("target", ["[::1]:50151", "dns:///localhost:50151",
                                    "ipv4:127.0.0.1:50151"])
def test_grpc_targets_pass_the_address_check(target: str) -> None:
    import copy
    import pickle

    from planner_svc.cliargs import FromEnvironment, address

    assert address(target) == target
    marked = FromEnvironment(target, "PLANNER_SVC_ADDRESS")
    assert type(address(marked)) is str
    assert pickle.loads(pickle.dumps(marked)).variable == copy.copy(marked).variable
