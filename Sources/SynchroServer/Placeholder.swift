enum SynchroServerModule {}
