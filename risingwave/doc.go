// Package risingwave runs the packing contract's shared SQL text
// (internal/contractsql) on RisingWave: its wrapper, the two Kafka sources
// and the np_input relation they feed (sql/risingwave/*.sql), and the whole
// script, every relation of the shared text created as a materialized view
// (Script, Statements). risingwave.sql is that script for the defaults
// (DefaultScriptOptions), checked in for docker-compose.yml; a test fails
// when it is stale. app/compare's TestGokaEqualsRisingWave compares it, on
// a running RisingWave, with the Goka packer row for row. README.md has the evidence for every
// RisingWave feature the script uses.
package risingwave
