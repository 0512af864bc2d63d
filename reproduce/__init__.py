"""Scripts that rerun the five papers and the published numbers they are compared with."""
