import Foundation

PeakMemoryReport.installIfRequested()
exit(CommandDispatcher.run(Array(CommandLine.arguments.dropFirst())).rawValue)
