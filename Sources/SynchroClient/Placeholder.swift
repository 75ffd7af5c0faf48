enum SynchroClientModule {}
