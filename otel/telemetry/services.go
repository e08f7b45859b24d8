package telemetry

// Service names of the workshop's components. Every component traces under a
// name of its own (SigNoz draws an edge between two services, never within
// one): the commands that run one component use its name unless
// OTEL_SERVICE_NAME is set (ServiceName), and the demo's harness asks for each
// component's provider by these names.
const (
	ServiceToyElves = "toy-elves"
	ServiceBoxElves = "box-elves"
	ServicePacker   = "packer"
	ServiceSleigh   = "sleigh"
)

// ElvesService is the service name of the elves of stream ("toys" or
// "boxes").
func ElvesService(stream string) string {
	if stream == "boxes" {
		return ServiceBoxElves
	}
	return ServiceToyElves
}
