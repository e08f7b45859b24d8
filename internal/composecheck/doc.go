// Package composecheck holds the checks of docker-compose.yml and Dockerfile
// that run without a Docker engine (its tests): the compose file loads and
// validates with compose-go, images are pinned, ports stay on loopback, the
// services that trace are pointed at SigNoz's collector, which runs its
// static config (no OpAMP manager) and whose healthcheck is an OTLP export to
// its HTTP receiver (run here with bash against a stand-in receiver) with a
// start period for the first migrations, and which scrapes the workshop's
// Kafka for SigNoz's Kafka pages (kafkametrics: the services' brokers, a
// protocol the broker speaks, the scrapers and interval the pages chart, in
// the metrics pipeline); the packer and the sleigh only need the collector
// started, the elves wait for it without requiring it; every service_healthy
// dependency has a healthcheck, the RisingWave job applies the SQL the tests
// check, and the Dockerfile's go build succeeds; the SigNoz dashboard names
// the series SigNoz stores (a histogram's percentiles from its .bucket) and
// takes service names from its variables.
//
// The machines this project is developed and tested on have no Docker
// engine, so `docker compose up` itself is not run by these checks.
package composecheck
