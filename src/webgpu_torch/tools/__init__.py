"""What is built on the package and imported by nothing in it: the command line, the browser page and its
server, the demo, the benchmark suites, the example models and the op-coverage document."""
