enum SynchroHTTPModule {}
