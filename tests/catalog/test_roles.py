"""Roles of a data directory: the bootstrap superuser, SCRAM verifiers, persistence."""

from __future__ import annotations

import json
import stat

import pytest
import scramp

from heron.catalog.roles import BOOTSTRAP_OID, Predefined, Roles, Verifier
from heron.planner.errors import SqlError, SqlState


def test_first_open_creates_the_bootstrap_superuser_without_a_password(tmp_path):
    roles = Roles.open(tmp_path)
    heron = roles.get("heron")
    assert heron is not None and heron.oid == BOOTSTRAP_OID
    assert heron.superuser and heron.login and heron.verifier is None
    assert stat.S_IMODE((tmp_path / "roles.json").stat().st_mode) == 0o600


def test_the_bootstrap_password_is_stored_as_a_verifier_and_follows_the_environment(tmp_path):
    Roles.open(tmp_path, "s3cret")
    text = (tmp_path / "roles.json").read_text()
    assert "s3cret" not in text and "SCRAM-SHA-256$4096:" in text
    first = Roles.open(tmp_path).get("heron").verifier  # no variable: the password stays
    assert first is not None
    second = Roles.open(tmp_path, "other").get("heron").verifier
    assert second != first


def test_verifier_matches_scramp_and_parses_its_text():
    verifier = Verifier.from_password("pencil", salt=b"0123456789abcdef")
    salt, stored, server, iterations = scramp.ScramMechanism().make_auth_info(
        "pencil", iteration_count=4096, salt=b"0123456789abcdef")
    assert (verifier.salt, verifier.stored_key, verifier.server_key, verifier.iterations) == (
        salt, stored, server, iterations)
    assert Verifier.parse(verifier.text()) == verifier
    assert Verifier.parse("md5abcdef") is None
    assert Verifier.parse("SCRAM-SHA-256$4096:c2FsdA==$YQ==:Yg==") is None  # short keys


def test_changes_persist_and_errors_name_the_role(tmp_path):
    roles = Roles.open(tmp_path)
    alice = roles.create("alice", login=True, verifier=Verifier.from_password("pw"))
    assert alice.oid == 16384 and not alice.superuser
    roles.grant(Predefined.READ_SERVER_FILES, "alice")
    roles.create("bob")
    roles.rename("bob", "robert")
    with pytest.raises(SqlError) as exc:
        roles.create("alice")
    assert exc.value.sqlstate == SqlState.DUPLICATE_OBJECT
    with pytest.raises(SqlError) as exc:
        roles.drop("nobody")
    assert (exc.value.sqlstate, exc.value.message) == (
        SqlState.UNDEFINED_OBJECT, 'role "nobody" does not exist')
    reopened = Roles.open(tmp_path)
    assert [r.name for r in reopened.all()] == ["heron", "alice", "robert"]
    alice = reopened.get("alice")
    assert alice.has_privileges_of(Predefined.READ_SERVER_FILES)
    assert not alice.has_privileges_of(Predefined.WRITE_SERVER_FILES)
    assert reopened.get("heron").has_privileges_of(Predefined.WRITE_SERVER_FILES)
    reopened.revoke(Predefined.READ_SERVER_FILES, "alice")
    reopened.alter("alice", verifier=None, superuser=True)
    reopened.drop("robert")
    data = json.loads((tmp_path / "roles.json").read_text())
    assert [(r["name"], r["superuser"], r["password"], r["member_of"])
            for r in data["roles"]] == [("heron", True, None, []), ("alice", True, None, [])]
