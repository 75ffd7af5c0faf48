import Foundation

exit(CommandDispatcher.run(Array(CommandLine.arguments.dropFirst())).rawValue)
