package sparkbloom.index

import sparkbloom.index.sliced.IndexCache

/**
 * Which file of an index version each listed file is (-1: not in it, or changed since: size or modification
 * time differ). A lookup per listed file by path; the answer for a listing is remembered in [[IndexCache]]
 * (bounded by `spark.sparkbloom.cache.maxBytes`) and reused when the next query lists the very same
 * `FileStatus` objects (Spark's file index and its `FileStatusCache` hand out the same objects until the
 * table is refreshed): checked object by object, so a listing with any file added, removed, replaced or
 * reordered is matched again. Only identity is trusted, never a hash.
 */
object FileMatcher {
  private final class Matched(val statuses: Array[org.apache.hadoop.fs.FileStatus], val fileNos: Array[Int]) {
    @volatile var summary: Summary = null
  }

  /**
   * A listing matched to one index version, for pruning in proportion to the candidates: listed position of
   * each file of the version (-1: not listed), the listed files it does not cover, and row group → file.
   */
  final class Summary(val posOfFile: Array[Int], val notCovered: Array[Int], val emptyCovered: Array[Int],
                      val coveredRowGroups: Long, firstRg: Array[Int]) {
    def fileOfRowGroup(rg: Int): Int = {
      val i = java.util.Arrays.binarySearch(firstRg, rg)
      if (i >= 0) { var f = i; while (f + 1 < firstRg.length && firstRg(f + 1) == rg) f += 1; f }
      else -i - 2
    }
  }

  def summary(v: IndexVersion, statuses: Array[org.apache.hadoop.fs.FileStatus], fileNos: Array[Int]): Summary = {
    val cached = IndexCache.get[Matched](key(v)).filter(_.fileNos eq fileNos)
    cached.flatMap(m => Option(m.summary)).getOrElse {
      val l = v.layout
      val posOfFile = Array.fill(l.numFiles)(-1)
      val notCovered = Array.newBuilder[Int]; val empty = Array.newBuilder[Int]
      var rgs = 0L
      var i = 0
      while (i < fileNos.length) {
        val f = fileNos(i)
        if (f < 0) notCovered += i
        else {
          posOfFile(f) = i
          val n = l.firstRg(f + 1) - l.firstRg(f)
          rgs += n
          if (n == 0) empty += i
        }
        i += 1
      }
      val s = new Summary(posOfFile, notCovered.result(), empty.result(), rgs, l.firstRg)
      cached.foreach(_.summary = s)
      s
    }
  }

  // One remembered listing per index version (the newest replaces it), so a listing Spark has dropped is not
  // kept alive here for long.
  private def key(v: IndexVersion): String =
    s"${v.dir}@${v.meta.version}@${v.meta.dataDir}#listing"

  private val ParallelFrom = 50000

  def matchListing(v: IndexVersion, statuses: Array[org.apache.hadoop.fs.FileStatus]): Array[Int] = {
    val k = key(v)
    IndexCache.get[Matched](k).filter(m => sameObjects(m.statuses, statuses)) match {
      case Some(m) => m.fileNos
      case None =>
        val out = new Array[Int](statuses.length)
        def matchOne(i: Int): Unit = {
          val st = statuses(i)
          out(i) = v.coveredFile(st.getPath.toString, st.getLen, st.getModificationTime)
        }
        // A listing seen for the first time (a cold lookup, or after REFRESH TABLE): a path's string and its
        // lookup cost ~0.4 µs, so a large one is matched on every core (the lookups only read the layout).
        if (statuses.length >= ParallelFrom)
          java.util.stream.IntStream.range(0, statuses.length).parallel().forEach(i => matchOne(i))
        else { var i = 0; while (i < statuses.length) { matchOne(i); i += 1 } }
        IndexCache.put(k, new Matched(statuses, out), 16L * statuses.length + 4L * v.layout.numFiles + 64)
        out
    }
  }

  private def sameObjects(a: Array[org.apache.hadoop.fs.FileStatus], b: Array[org.apache.hadoop.fs.FileStatus])
      : Boolean = {
    if (a.length != b.length) return false
    var i = 0
    while (i < a.length) { if (a(i) ne b(i)) return false; i += 1 }
    true
  }
}
