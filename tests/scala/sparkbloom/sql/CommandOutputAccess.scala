package sparkbloom.sql

import sparkbloom.index.IndexDescription

/** DESCRIBE BLOOM INDEX's rows as a map, for suites outside this package. */
object CommandOutputAccess {
  def describe(d: IndexDescription): Map[String, String] =
    CommandOutput.describeRows(d).map(r => r.getString(0) -> r.getString(1)).toMap
}
