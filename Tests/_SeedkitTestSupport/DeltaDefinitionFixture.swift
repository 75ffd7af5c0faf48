/// Delta source definitions for the fixture server (``DeltaFixtureServer``): `articles` in seed 003's shape and
/// `users` in seed 004's, with the template given (the fixture understands `updatedAfter={since}&limit={limit}` and
/// `$filter={cursorField} gt {since}&$top={limit}`).
public enum DeltaDefinitionFixture {
    public static func text(
        baseURL: String, articleLimit: Int = 3, userPageSize: Int = 2, maxPages: Int = 2,
        template: String = "updatedAfter={since}&limit={limit}", bearerEnv: String = "DELTA_TOKEN"
    ) -> String {
        """
        {
          "format": "seedkit-delta-source/1",
          "base_url": "\(baseURL)",
          "auth": {"bearer_env": "\(bearerEnv)"},
          "headers": {"X-Tenant": "\(DeltaFixtureServer.tenant)"},
          "entities": [
            {
              "name": "articles", "table": "articles", "primary_key": "id",
              "columns": [
                {"name": "id", "type": "string"},
                {"name": "title", "type": "string"},
                {"name": "words", "type": "int64"},
                {"name": "updated_at", "type": "datetime"},
                {"name": "tags", "type": "json", "nullable": true}
              ],
              "paging": {"shape": "changes", "path": "/v1/sync/articles", "limit": \(articleLimit)}
            },
            {
              "name": "users", "table": "app_users", "primary_key": "id",
              "columns": [
                {"name": "id", "type": "string"},
                {"name": "name", "type": "string"},
                {"name": "updatedAt", "type": "datetime"}
              ],
              "paging": {
                "shape": "list", "base_path": "/users", "list_query_template": "\(template)",
                "cursor_field": "updatedAt", "page_size": \(userPageSize), "max_pages_per_session": \(maxPages)
              }
            }
          ]
        }
        """
    }
}
