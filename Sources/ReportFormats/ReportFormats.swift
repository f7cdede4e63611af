// ReportFormats
