// Stand-ins for the few kafka.utils members Kafka 2.4.1's StateChangeLogMerger uses (benchmark only,
// see build.sh beside this file): the tool itself compiles unchanged against them.
package kafka.utils {
  trait Logging
  object Exit { def exit(code: Int): Nothing = { System.exit(code); throw new IllegalStateException() } }
  object CoreUtils { def duplicates[T](s: Iterable[T]): Iterable[T] = s.groupBy(identity).collect { case (k, l) if l.size > 1 => k } }
  object CommandLineUtils {
    def printUsageAndDie(parser: joptsimple.OptionParser, message: String): Nothing = {
      System.err.println(message); parser.printHelpOn(System.err); Exit.exit(1)
    }
  }
}
