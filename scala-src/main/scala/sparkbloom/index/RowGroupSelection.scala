package sparkbloom.index

/** Row-group byte ranges that may match, per file path; shared by the file index and the file format. */
final class RowGroupSelection(val enabled: Boolean) extends Serializable {
  @volatile private var ranges: Map[String, Array[Long]] = Map.empty
  @volatile private var uncovered: Set[String] = Set.empty
  @volatile private var decided = false
  def add(more: Map[String, Array[Long]]): Unit = synchronized { if (enabled) ranges = ranges ++ more }
  /** [start, end) pairs, flattened, of the row groups to read; None = read the whole file. */
  def get(path: String): Option[Array[Long]] = ranges.get(path)
  /** Records the listed files no index covers (an index decided every other listed file). */
  def addNotCovered(paths: Iterable[String]): Unit = synchronized { decided = true; uncovered = uncovered ++ paths }
  /** Whether an index decided this file at planning time (false: no index, or the file is new or changed). */
  def decidedByIndex(path: String): Boolean = decided && !uncovered.contains(path)
}
