"""The contract both runtimes read: the plain-data Program, the saved file (`.wgpt`), symbolic sizes, dtypes,
packed weights, input and output trees, errors and limits. Nothing here imports the compiler or the tools;
js/src mirrors it module by module."""
