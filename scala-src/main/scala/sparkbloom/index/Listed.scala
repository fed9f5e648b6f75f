package sparkbloom.index

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}

/**
 * Files' statuses as a listing of their directories shows them, for the identity (path, size, modification time)
 * an index records of a file. A table's files are matched to an index by the statuses Spark's listing gives, and
 * on an object store a single file's status can disagree with a listing's: S3A's HEAD reads `Last-Modified` in whole
 * seconds, a LIST gives milliseconds (MinIO; S3 lists whole seconds too). So what an index records comes from
 * listings, one LIST per directory, never from `getFileStatus`.
 */
object Listed {
  /** The listed status of each of `files` that is there (by qualified path); a directory that fails is skipped. */
  def statuses(fs: FileSystem, files: Seq[Path]): Map[Path, FileStatus] = {
    val wanted = files.map(fs.makeQualified).toSet
    wanted.groupBy(_.getParent).iterator.flatMap { case (dir, inDir) =>
      try fs.listStatus(dir).iterator.map(st => fs.makeQualified(st.getPath) -> st).filter(p => inDir(p._1))
      catch { case NonFatal(_) => Iterator.empty }
    }.toMap
  }
}
