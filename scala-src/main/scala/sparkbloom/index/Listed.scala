package sparkbloom.index

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}

import sparkbloom.parquet.StoreFiles

/**
 * Files' statuses as a listing of their directories shows them, for the identity (path, size, modification time)
 * an index records of a file. A table's files are matched to an index by the statuses Spark's listing gives, and
 * on an object store a single file's status can disagree with a listing's: S3A's HEAD reads `Last-Modified` in whole
 * seconds, a LIST gives milliseconds (MinIO; S3 lists whole seconds too). So what an index records comes from
 * listings, one LIST per directory, never from `getFileStatus`.
 */
object Listed {
  /**
   * The listed status of each of `files` that is there (by qualified path); a directory that fails is skipped.
   *
   * On S3A a directory with few of the files (up to [[KeyListingsPerDirectory]]) is not listed whole: each file is,
   * by a LIST of its own key (the store's listing of that key, the same size and modification time as the
   * directory's listing gives), all side by side. A write's new file in a table directory of 10^4 files is then one
   * LIST of one key, not ten pages of a thousand. Where that cannot be done, the directory is listed.
   */
  def statuses(fs: FileSystem, files: Seq[Path]): Map[Path, FileStatus] = {
    val wanted = files.map(fs.makeQualified).toSet
    val sdk = if (fs.getScheme == "s3a") CommitStore.S3ConditionalPut.sdkFor(fs) else None
    val byDir = wanted.groupBy(_.getParent).toVector
    StoreFiles.concurrently(fs,
      byDir.map { case (dir, inDir) =>
        () =>
          sdk.filter(_ => inDir.size <= KeyListingsPerDirectory)
            .flatMap(s => scala.util.Try(keyListings(fs, s, inDir.toVector)).toOption)
            .getOrElse(
              try
                fs.listStatus(dir).iterator.map(st => fs.makeQualified(st.getPath) -> st).filter(p => inDir(p._1)).toMap
              catch { case NonFatal(_) => Map.empty[Path, FileStatus] })
      }).flatten.toMap
  }

  /** Files in one directory past which the directory is listed instead of each file's key. */
  val KeyListingsPerDirectory = 16

  private def keyListings(fs: FileSystem, sdk: CommitStore.S3ConditionalPut.Sdk, files: Seq[Path])
      : Map[Path, FileStatus] = {
    val blockSize = fs.getDefaultBlockSize(files.head)
    StoreFiles.concurrently(fs,
      files.map { f => () =>
        sdk.listedAs(f.toUri.getHost, f.toUri.getPath.stripPrefix("/"))
          .map { case (size, mtime) => f -> new FileStatus(size, false, 1, blockSize, mtime, f) }
      }).flatten.toMap
  }
}
