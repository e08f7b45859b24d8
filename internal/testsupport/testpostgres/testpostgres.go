// Package testpostgres gives tests a PostgreSQL server: the libpq DSN in
// $NORTHPOLE_TEST_POSTGRES (e.g.
// postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable).
// Without it a test skips with a message saying how to run it, except in CI
// (CI=true), where a missing server is a failure: CI must never pass by
// skipping the PostgreSQL half of the SQL tests.
package testpostgres

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// EnvDSN names the environment variable holding the DSN.
const EnvDSN = "NORTHPOLE_TEST_POSTGRES"

// DSN returns the server's DSN, or skips t (fails it when CI=true).
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn != "" {
		return dsn
	}
	msg := EnvDSN + " is not set: no PostgreSQL to test against (set it to a libpq DSN, " +
		"e.g. postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable)"
	if strings.EqualFold(os.Getenv("CI"), "true") {
		t.Fatal("CI=true and " + msg)
	}
	t.Skip(msg)
	return ""
}

// Optional returns the DSN and true, or "" and false after logging why
// PostgreSQL is left out, for tests that compare several engines and can go
// on without this one. In CI a missing server fails t.
func Optional(t testing.TB) (string, bool) {
	t.Helper()
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return dsn, true
	}
	if strings.EqualFold(os.Getenv("CI"), "true") {
		t.Fatal("CI=true and " + EnvDSN + " is not set: no PostgreSQL to test against")
	}
	t.Log(EnvDSN + " is not set: PostgreSQL is left out of this test")
	return "", false
}

var seq atomic.Int64

// Schema returns a schema name no other test in this process (nor, thanks to
// the pid, a concurrent test process) uses.
func Schema(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), seq.Add(1))
}
