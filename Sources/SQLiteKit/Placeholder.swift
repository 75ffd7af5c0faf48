/// Placeholder until the first real file lands (removed by then).
enum SQLiteKitModule {}
