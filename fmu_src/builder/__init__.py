"""What builds an FMU (build time, not in the FMUs): the build, the model source and its options, the model description's additions."""
