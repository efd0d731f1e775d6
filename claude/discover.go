package claude

// EnvCLIPath names the environment variable that points Tether at a CLI
// binary when Options.CLIPath is empty. Discovery then tries PATH and the
// usual install places.
const EnvCLIPath = "TETHER_CLI_PATH"

// MinCLIVersion is the oldest CLI version Tether is tested against.
const MinCLIVersion = "2.1.197"
